#include "models/lora.h"

#include <torch/torch.h>

#include <cmath>

namespace allot::models {

double LoraSpec::scaling() const {
  const double rank = static_cast<double>(r);
  return use_rslora ? alpha / std::sqrt(rank) : alpha / rank;
}

LoraLinearImpl::LoraLinearImpl(int64_t in_features, int64_t out_features, bool with_bias,
                               const at::TensorOptions& options)
    : in_features_(in_features), out_features_(out_features) {
  // nn.Linear's default initialisation, so a model built from a config is usable as is.
  const double bound = 1.0 / std::sqrt(static_cast<double>(in_features));
  weight = register_parameter(
      "weight", torch::empty({out_features, in_features}, options).uniform_(-bound, bound));
  if (with_bias) {
    bias =
        register_parameter("bias", torch::empty({out_features}, options).uniform_(-bound, bound));
  }
}

at::Tensor LoraLinearImpl::forward(const at::Tensor& x) {
  at::Tensor y = torch::linear(x, weight, bias);
  if (!has_lora() || !lora_enabled_) return y;
  at::Tensor h = x.to(lora_A.scalar_type());
  if (spec_.dropout > 0.0) h = torch::dropout(h, spec_.dropout, is_training());
  at::Tensor delta = torch::linear(torch::linear(h, lora_A), lora_B) * spec_.scaling();
  // As PEFT's LoRA Linear: the float32 adapter term joins the base output in float32 and the sum
  // is rounded once to the base dtype. Rounding the term first gives other bfloat16 bits, which
  // moved log-probs by 1e-2 against PEFT (bench/gpu/parity.py).
  return (y.to(delta.scalar_type()) + delta).to(y.scalar_type());
}

void LoraLinearImpl::AttachLora(const LoraSpec& spec, at::Generator* generator) {
  DetachLora();
  spec_ = spec;
  auto f32 = torch::TensorOptions().dtype(torch::kFloat).device(weight.device());
  // kaiming_uniform_(a=sqrt(5)) on [r, in]: gain sqrt(2 / (1 + 5)), bound gain * sqrt(3 / in)
  // = 1 / sqrt(in).
  const double bound = 1.0 / std::sqrt(static_cast<double>(in_features_));
  at::Tensor a = torch::empty({spec.r, in_features_}, f32.device(torch::kCPU));
  if (generator != nullptr) {
    a.uniform_(-bound, bound, *generator);
  } else {
    a.uniform_(-bound, bound);
  }
  lora_A = register_parameter("lora_A", a.to(weight.device()));
  lora_B = register_parameter("lora_B", torch::zeros({out_features_, spec.r}, f32));
  lora_enabled_ = true;
}

void LoraLinearImpl::DetachLora() {
  if (!has_lora()) return;
  // Module has no unregister: rebuild the parameter dict without the adapter.
  parameters_.erase("lora_A");
  parameters_.erase("lora_B");
  lora_A = at::Tensor();
  lora_B = at::Tensor();
}

at::Tensor LoraLinearImpl::MergedWeight() const {
  if (!has_lora()) return weight.detach();
  torch::NoGradGuard no_grad;
  at::Tensor delta = torch::matmul(lora_B, lora_A) * spec_.scaling();
  return (weight.to(torch::kFloat) + delta).to(weight.scalar_type());
}

void LoraLinearImpl::MergeAndDetach() {
  if (!has_lora()) return;
  at::Tensor merged = MergedWeight();
  {
    torch::NoGradGuard no_grad;
    weight.copy_(merged);
  }
  DetachLora();
}

}  // namespace allot::models
