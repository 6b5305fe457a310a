#include "trainer/optim/lr_schedule.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>

namespace allot::trainer {

Result<LrSchedule> LrSchedule::Create(const OptimConfig& config, int64_t total_steps) {
  if (total_steps < 1) return InvalidArgument("lr schedule: total_steps must be >= 1");
  Kind kind;
  if (config.schedule == "constant") {
    kind = Kind::kConstant;
  } else if (config.schedule == "linear") {
    kind = Kind::kLinear;
  } else if (config.schedule == "cosine") {
    kind = Kind::kCosine;
  } else {
    return InvalidArgument("optim.schedule: unknown schedule '" + config.schedule +
                           "' (constant | linear | cosine)");
  }
  int64_t warmup = config.warmup_steps;
  if (warmup == 0 && config.warmup_ratio > 0.0) {
    warmup =
        static_cast<int64_t>(std::ceil(config.warmup_ratio * static_cast<double>(total_steps)));
  }
  if (warmup >= total_steps && kind != Kind::kConstant) {
    return InvalidArgument("optim: warmup (" + std::to_string(warmup) +
                           " steps) leaves no decay within " + std::to_string(total_steps) +
                           " total steps");
  }
  return LrSchedule(kind, config.lr, config.min_lr_ratio, warmup, total_steps);
}

double LrSchedule::LrAt(int64_t step) const {
  step = std::max<int64_t>(step, 0);
  if (step < warmup_) return lr_ * static_cast<double>(step) / static_cast<double>(warmup_);
  if (kind_ == Kind::kConstant) return lr_;
  const double span = static_cast<double>(total_ - warmup_);
  const double progress = std::min(1.0, static_cast<double>(step - warmup_) / span);
  double factor;
  if (kind_ == Kind::kLinear) {
    factor = 1.0 - progress;
  } else {
    factor = 0.5 * (1.0 + std::cos(M_PI * progress));
  }
  return lr_ * (min_ratio_ + (1.0 - min_ratio_) * factor);
}

double LrSchedule::Apply(torch::optim::Optimizer& optimizer, int64_t step) const {
  const double lr = LrAt(step);
  for (auto& group : optimizer.param_groups()) group.options().set_lr(lr);
  return lr;
}

}  // namespace allot::trainer
