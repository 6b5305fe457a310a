// AdamW over a model's trainable parameters, built from OptimConfig.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/optim/adamw.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "trainer/optim/optim_config.h"

namespace allot::trainer {

using NamedParameters = std::vector<std::pair<std::string, at::Tensor>>;

// Two parameter groups: tensors of rank >= 2 with config.weight_decay, and rank <= 1 tensors
// (RMSNorm weights, biases) without, as transformers' Trainer does. Parameters that do not
// require grad are left out. An empty parameter list or an inconsistent config is an error.
Result<std::unique_ptr<torch::optim::AdamW>> MakeAdamW(const OptimConfig& config,
                                                       const NamedParameters& params);

// The parameters in the optimizer's order (group by group): the order in which the optimizer
// state is saved and restored.
std::vector<at::Tensor> OptimizerParameters(const torch::optim::Optimizer& optimizer);

// Checks the config on its own (warmup_steps and warmup_ratio both set, ...).
Status ValidateOptimConfig(const OptimConfig& config);

}  // namespace allot::trainer
