#include "trainer/optim/adamw.h"

#include <torch/torch.h>

namespace allot::trainer {

Status ValidateOptimConfig(const OptimConfig& c) {
  if (c.warmup_steps > 0 && c.warmup_ratio > 0.0) {
    return InvalidArgument(
        "optim: warmup_steps and warmup_ratio are both set; warmup_steps would silently win, "
        "set only one");
  }
  if (c.schedule == "constant" && c.min_lr_ratio > 0.0) {
    return InvalidArgument("optim.min_lr_ratio has no effect with schedule: constant");
  }
  return Status::Ok();
}

Result<std::unique_ptr<torch::optim::AdamW>> MakeAdamW(const OptimConfig& config,
                                                       const NamedParameters& params) {
  ALLOT_RETURN_IF_ERROR(ValidateOptimConfig(config));
  std::vector<at::Tensor> decay;
  std::vector<at::Tensor> no_decay;
  for (const auto& [name, p] : params) {
    if (!p.requires_grad()) continue;
    (p.dim() >= 2 ? decay : no_decay).push_back(p);
  }
  if (decay.empty() && no_decay.empty()) {
    return InvalidArgument("optim: no trainable parameters");
  }
  auto options = torch::optim::AdamWOptions(config.lr)
                     .betas(std::make_tuple(config.beta1, config.beta2))
                     .eps(config.eps)
                     .weight_decay(config.weight_decay);
  std::vector<torch::optim::OptimizerParamGroup> groups;
  if (!decay.empty())
    groups.emplace_back(decay, std::make_unique<torch::optim::AdamWOptions>(options));
  if (!no_decay.empty()) {
    auto plain = options;
    plain.weight_decay(0.0);
    groups.emplace_back(no_decay, std::make_unique<torch::optim::AdamWOptions>(plain));
  }
  return std::make_unique<torch::optim::AdamW>(std::move(groups), options);
}

std::vector<at::Tensor> OptimizerParameters(const torch::optim::Optimizer& optimizer) {
  std::vector<at::Tensor> out;
  for (const auto& group : optimizer.param_groups()) {
    for (const auto& p : group.params()) out.push_back(p);
  }
  return out;
}

}  // namespace allot::trainer
