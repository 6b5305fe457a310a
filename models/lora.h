// LoRA (Hu et al., 2021): y = W x + b + s * B(A(dropout(x))), with A [r, in], B [out, r] and
// s = alpha / r, or alpha / sqrt(r) with rsLoRA (Kalajdzievski, 2023).
//
// LoraLinear is a linear layer that can carry one adapter. The adapter can be switched off,
// so the base model (the GRPO reference policy) costs no second copy of the weights. As in
// PEFT, A and B are kept in float32 whatever the base dtype; x is cast to their dtype for the
// adapter path and the result cast back.
#pragma once

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <cstdint>

namespace allot::models {

struct LoraSpec {
  int64_t r = 16;
  double alpha = 32.0;
  double dropout = 0.0;
  bool use_rslora = false;
  double scaling() const;
};

class LoraLinearImpl : public torch::nn::Module {
 public:
  LoraLinearImpl(int64_t in_features, int64_t out_features, bool bias,
                 const at::TensorOptions& options);

  at::Tensor forward(const at::Tensor& x);

  // Adds an adapter: A uniform in +-1/sqrt(in) (PEFT's kaiming_uniform with a = sqrt(5)) drawn
  // from `generator` when given, B = 0, so the adapted layer starts equal to the base layer.
  void AttachLora(const LoraSpec& spec, at::Generator* generator = nullptr);
  // Attaches `a` [r, in] and `b` [out, r] (float32) as the adapter, sharing their storage, so
  // that a caller holding several adapters (one per role, R2-Reasoner Sec. 4.3) swaps them in
  // and out without copies and each keeps its own optimizer state.
  void SetLora(const LoraSpec& spec, const at::Tensor& a, const at::Tensor& b);
  void DetachLora();
  bool has_lora() const { return lora_A.defined(); }
  const LoraSpec& lora_spec() const { return spec_; }

  void set_lora_enabled(bool enabled) { lora_enabled_ = enabled; }
  // The generator LoRA dropout draws its masks from on the CPU (undefined: the default one, as
  // torch::dropout). A learner gives it a generator of its own, so that its masks are a function
  // of its seed alone, not of whatever else in the process draws from the default generator.
  void set_dropout_generator(const at::Generator& generator) { dropout_generator_ = generator; }
  bool lora_enabled() const { return lora_enabled_; }

  // W + s * B A in W's dtype (W itself when there is no adapter).
  at::Tensor MergedWeight() const;
  // Folds the adapter into W and removes it.
  void MergeAndDetach();

  int64_t in_features() const { return in_features_; }
  int64_t out_features() const { return out_features_; }

  at::Tensor weight;  // [out, in]
  at::Tensor bias;    // [out] or undefined
  at::Tensor lora_A;  // [r, in] float32, or undefined
  at::Tensor lora_B;  // [out, r] float32, or undefined

 private:
  int64_t in_features_;
  int64_t out_features_;
  LoraSpec spec_;
  bool lora_enabled_ = true;
  at::Generator dropout_generator_;
};
TORCH_MODULE(LoraLinear);

}  // namespace allot::models
