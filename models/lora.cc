#include "models/lora.h"

#include <torch/torch.h>

#include <cmath>

namespace allot::models {
namespace {

// PEFT's join of a float32 adapter term to a bfloat16 (or half) base output,
// round(float(y) + (x A^T) B^T * scaling), as one autograd node: `ts` is (x A^T) * scaling
// [..., r], so the adapter's product lands in float32 and one element-wise pass reads y and it
// and writes the rounded sum. Autograd of the plain expression would also cast y up, scale the
// [..., out] product, add, round, and in backward cast the gradient up, scale it and round the
// base's part back down: about 66 bytes per output element against 28 here. The base gets the
// incoming gradient unchanged (rounding float(y) + d back to y's dtype passes it through), the
// adapter the float32 products that autograd forms.
struct LoraJoinFn : public torch::autograd::Function<LoraJoinFn> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& y,
                            const at::Tensor& ts, const at::Tensor& lora_b) {
    const at::Tensor ts2 = ts.reshape({-1, ts.size(-1)});
    const at::Tensor delta = torch::mm(ts2, lora_b.t());
    at::Tensor out = torch::empty(y.sizes(), y.options());
    // Computed in float32 (the common dtype), written in y's dtype.
    torch::add_out(out, y, delta.view(y.sizes()));
    ctx->save_for_backward({ts2, lora_b});
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& ts2 = saved[0];
    const at::Tensor& lora_b = saved[1];
    const at::Tensor& g = grads[0];
    const at::Tensor gf = g.reshape({-1, g.size(-1)}).to(torch::kFloat);
    at::Tensor grad_ts;
    at::Tensor grad_b;
    if (ctx->needs_input_grad(1)) {
      std::vector<int64_t> shape = g.sizes().vec();
      shape.back() = ts2.size(1);
      grad_ts = torch::mm(gf, lora_b).view(shape);
    }
    if (ctx->needs_input_grad(2)) grad_b = torch::mm(gf.t(), ts2);
    return {g, grad_ts, grad_b};
  }
};

// The adapter's first product, float(x) A^T, keeping x in its own dtype for backward. Autograd
// of x.to(float32) followed by linear would keep the float32 copy of x alive until backward:
// for a bfloat16 base, 4 bytes per input element per adapted projection (q, k and v each hold
// their own copy of the same input) where x's 2 bytes are shared. Backward casts x again for
// A's gradient and rounds x's gradient to x's dtype, as the cast's backward does: the same
// floats as the plain expression (LoraJoinTest checks it), less memory for every layer that keeps
// its activations.
struct LoraDownFn : public torch::autograd::Function<LoraDownFn> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x,
                            const at::Tensor& lora_a) {
    const at::Tensor x2 = x.reshape({-1, x.size(-1)});
    std::vector<int64_t> shape = x.sizes().vec();
    shape.back() = lora_a.size(0);
    ctx->save_for_backward({x, lora_a});
    return torch::mm(x2.to(lora_a.scalar_type()), lora_a.t()).view(shape);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& x = saved[0];
    const at::Tensor& lora_a = saved[1];
    const at::Tensor g = grads[0].reshape({-1, grads[0].size(-1)});
    at::Tensor grad_x;
    at::Tensor grad_a;
    if (ctx->needs_input_grad(0)) {
      grad_x = torch::mm(g, lora_a).to(x.scalar_type()).view(x.sizes());
    }
    if (ctx->needs_input_grad(1)) {
      grad_a = torch::mm(g.t(), x.reshape({-1, x.size(-1)}).to(lora_a.scalar_type()));
    }
    return {grad_x, grad_a};
  }
};

}  // namespace

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
  const bool half_base = y.scalar_type() != lora_A.scalar_type() &&
                         y.scalar_type() != torch::kFloat && y.scalar_type() != torch::kDouble;
  const bool dropout = spec_.dropout > 0.0 && is_training();
  if (half_base && !dropout) {
    return LoraJoinFn::apply(y, LoraDownFn::apply(x, lora_A) * spec_.scaling(), lora_B);
  }
  at::Tensor h = x.to(lora_A.scalar_type());
  if (dropout && dropout_generator_.defined() && h.device().is_cpu()) {
    // torch::dropout's own arithmetic (bernoulli(1 - p) / (1 - p)), drawn from our generator.
    const double keep = 1.0 - spec_.dropout;
    h = h * at::empty_like(h).bernoulli_(keep, dropout_generator_).div_(keep);
  } else if (spec_.dropout > 0.0) {
    h = torch::dropout(h, spec_.dropout, is_training());
  }
  // As PEFT's LoRA Linear: the float32 adapter term joins the base output in float32 and the sum
  // is rounded once to the base dtype. Rounding the term first gives other bfloat16 bits, which
  // moved log-probs by 1e-2 against PEFT (bench/gpu/parity.py). A bfloat16 or half base does it
  // in one node (LoraJoinFn; the scaling applies to the rank-r term, the same floats for a
  // power-of-two scaling such as alpha = 2r); a float32 base keeps the plain expression.
  if (half_base) {
    return LoraJoinFn::apply(y, torch::linear(h, lora_A) * spec_.scaling(), lora_B);
  }
  at::Tensor delta = torch::linear(torch::linear(h, lora_A), lora_B) * spec_.scaling();
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

void LoraLinearImpl::SetLora(const LoraSpec& spec, const at::Tensor& a, const at::Tensor& b) {
  TORCH_CHECK(a.dim() == 2 && a.size(0) == spec.r && a.size(1) == in_features_,
              "LoRA A must be [r, in]");
  TORCH_CHECK(b.dim() == 2 && b.size(0) == out_features_ && b.size(1) == spec.r,
              "LoRA B must be [out, r]");
  DetachLora();
  spec_ = spec;
  lora_A = register_parameter("lora_A", a);
  lora_B = register_parameter("lora_B", b);
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
