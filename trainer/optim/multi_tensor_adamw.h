// An AdamW step over all parameters of a group at once (at::_foreach_* operations).
#pragma once

#include <torch/optim/adamw.h>

namespace allot::trainer {

// Does what optimizer.step() does, with the same state in the optimizer (so checkpoints through
// optimizer_state.h are unchanged), but each operation of the update runs over a list of tensors:
// on a GPU a handful of multi-tensor kernels per step instead of about ten kernels per parameter
// (a LoRA model's hundreds of small tensors left the GPU idle, waiting for the host to launch
// them). On the CPU the _foreach_ operations loop over the tensors with the very same per-tensor
// operations, so the result is bit-identical to step(). Parameters without a gradient are skipped
// as step() skips them. With amsgrad in any group it calls optimizer.step() instead.
void StepAdamW(torch::optim::AdamW& optimizer);

}  // namespace allot::trainer
