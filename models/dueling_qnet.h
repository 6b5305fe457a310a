// DuelingQNet: the RLoT navigator (RLoT Section 4.2; notes.md for the exact shape).
//
//   x' = (x - 1.5) / 1.5
//   h  = ReLU(Linear(7, 32)(x'))
//   A  = Linear(32, 5)(ReLU(Linear(32, 32)(h)))      advantage head
//   V  = Linear(32, 1)(ReLU(Linear(32, 32)(h)))      value head
//   Q  = V + A - mean(A)                             (Wang et al., 2016)
//
// With the defaults that is 2,566 parameters. The sizes are configurable for other MDPs.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <string>
#include <vector>

namespace allot::models {

struct DuelingQNetOptions {
  int state_dim = 7;
  int num_actions = 5;
  int hidden = 32;
  double input_offset = 1.5;  // x' = (x - offset) / scale
  double input_scale = 1.5;
};

class DuelingQNetImpl : public torch::nn::Module {
 public:
  explicit DuelingQNetImpl(const DuelingQNetOptions& options = {});

  // [B, state_dim] float -> [B, num_actions] Q-values.
  at::Tensor forward(const at::Tensor& state);

  const DuelingQNetOptions& options() const { return options_; }

  // Parameter names in a fixed order, as used by safetensors export and the plain evaluator.
  static std::vector<std::string> ParameterNames();

 private:
  DuelingQNetOptions options_;
  torch::nn::Linear trunk_{nullptr};
  torch::nn::Linear adv_hidden_{nullptr};
  torch::nn::Linear adv_out_{nullptr};
  torch::nn::Linear value_hidden_{nullptr};
  torch::nn::Linear value_out_{nullptr};
};
TORCH_MODULE(DuelingQNet);

int64_t CountParameters(torch::nn::Module& module);

}  // namespace allot::models
