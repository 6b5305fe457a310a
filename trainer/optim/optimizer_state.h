// AdamW's state as a safetensors image, for checkpoints (core/checkpoint_store.h).
//
//   param.<i>.exp_avg, param.<i>.exp_avg_sq (and param.<i>.max_exp_avg_sq with amsgrad)
//   metadata: "params" (count), "param.<i>.step", "schedule_step"
//
// <i> indexes OptimizerParameters(optimizer) (group by group), so a model built the same way
// restores the same state into the same tensors. The lr lives in no file: the schedule recomputes
// it from schedule_step. Values are copied bit for bit.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace torch::optim {
class AdamW;
}

namespace allot::trainer {

// `schedule_step`: optimizer steps taken so far (what LrSchedule::Apply is called with next).
Result<std::string> SerializeAdamWState(const torch::optim::AdamW& optimizer,
                                        int64_t schedule_step);

// Replaces the optimizer's state with the image's. The parameter count and every shape must
// match; errors name `source` (the file) and the tensor. Returns schedule_step.
Result<int64_t> RestoreAdamWState(torch::optim::AdamW& optimizer, std::string_view bytes,
                                  const std::string& source);

}  // namespace allot::trainer
