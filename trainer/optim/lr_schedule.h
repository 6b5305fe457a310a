// Learning-rate schedules with linear warmup, as transformers' get_{constant,linear,cosine}_
// schedule_with_warmup compute them: for optimizer step s (0-based, the number of updates
// already taken) and W warmup steps,
//   s < W:      lr * s / W
//   constant:   lr
//   linear:     lr * (m + (1 - m) * max(0, (T - s) / (T - W)))
//   cosine:     lr * (m + (1 - m) * 0.5 * (1 + cos(pi * (s - W) / (T - W))))
// with T the run's total optimizer steps and m = min_lr_ratio. The schedule is a pure function
// of the step, so a resumed run needs only the step to restore it.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "trainer/optim/optim_config.h"

namespace torch::optim {
class Optimizer;
}

namespace allot::trainer {

class LrSchedule {
 public:
  enum class Kind { kConstant, kLinear, kCosine };

  // `total_steps` >= 1. Unknown schedule names and warmup >= total are errors.
  static Result<LrSchedule> Create(const OptimConfig& config, int64_t total_steps);

  double LrAt(int64_t step) const;
  // Sets every parameter group's lr to LrAt(step) and returns it.
  double Apply(torch::optim::Optimizer& optimizer, int64_t step) const;

  int64_t warmup_steps() const { return warmup_; }
  int64_t total_steps() const { return total_; }
  Kind kind() const { return kind_; }

 private:
  LrSchedule(Kind kind, double lr, double min_ratio, int64_t warmup, int64_t total)
      : kind_(kind), lr_(lr), min_ratio_(min_ratio), warmup_(warmup), total_(total) {}

  Kind kind_;
  double lr_;
  double min_ratio_;
  int64_t warmup_;
  int64_t total_;
};

}  // namespace allot::trainer
