#include "models/chunked_logprob.h"

#include <torch/torch.h>

#include <algorithm>

namespace allot::models {
namespace {

// log p(target) for rows of hidden states, with the [rows, vocab] logits formed one chunk at a
// time in forward and recomputed chunk by chunk in backward, so memory is O(chunk * vocab)
// rather than O(rows * vocab). Two paths:
//  * float32 weights: float32 logits; forward keeps each row's log-sum-exp; backward forms
//    d logp(t) / d logits = onehot(t) - softmax in float32.
//  * bfloat16/half weights, temperature 1 (the learner's GPU case): the logits the product
//    gives (already rounded to the weights' dtype, as on the float32 path's input) go through
//    one fused log-softmax into float32 in forward and one softmax in the weights' dtype in
//    backward: 8 bytes per logit each way instead of 12 and 46 (casts, exp, scaling and the
//    float32 gradient of the logits are not materialised). The target column's 1 - p(t) comes
//    from the float32 log-prob of forward, so confident tokens keep their small gradient
//    rather than the rounding error of 1 - p(t) in bfloat16.
struct ChunkedLogProbFn : public torch::autograd::Function<ChunkedLogProbFn> {
  static at::Tensor ChunkLogits(const at::Tensor& h, const at::Tensor& w, double temperature) {
    at::Tensor logits = torch::matmul(h, w.t()).to(torch::kFloat);
    return temperature == 1.0 ? logits : logits / temperature;
  }

  static bool Reduced(const at::Tensor& weight, double temperature) {
    return weight.scalar_type() != torch::kFloat && weight.scalar_type() != torch::kDouble &&
           temperature == 1.0;
  }

  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& hidden,
                            const at::Tensor& weight, const at::Tensor& targets, int64_t chunk,
                            double temperature) {
    const int64_t n = hidden.size(0);
    const bool reduced = Reduced(weight, temperature);
    auto f32 = torch::TensorOptions().dtype(torch::kFloat).device(hidden.device());
    at::Tensor out = torch::empty({n}, f32);
    at::Tensor lse = reduced ? at::Tensor() : torch::empty({n}, f32);
    for (int64_t s = 0; s < n; s += chunk) {
      const int64_t len = std::min(chunk, n - s);
      const at::Tensor t = targets.narrow(0, s, len).unsqueeze(1);
      if (reduced) {
        at::Tensor logits = torch::matmul(hidden.narrow(0, s, len), weight.t());
        out.narrow(0, s, len).copy_(
            torch::log_softmax(logits, -1, torch::kFloat).gather(1, t).squeeze(1));
        continue;
      }
      at::Tensor logits = ChunkLogits(hidden.narrow(0, s, len), weight, temperature);
      at::Tensor l = torch::logsumexp(logits, -1);
      lse.narrow(0, s, len).copy_(l);
      out.narrow(0, s, len).copy_(logits.gather(1, t).squeeze(1) - l);
    }
    ctx->save_for_backward({hidden, weight, targets, reduced ? out : lse});
    ctx->saved_data["chunk"] = chunk;
    ctx->saved_data["temperature"] = temperature;
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const at::Tensor& hidden = saved[0];
    const at::Tensor& weight = saved[1];
    const at::Tensor& targets = saved[2];
    const int64_t chunk = ctx->saved_data["chunk"].toInt();
    const double temperature = ctx->saved_data["temperature"].toDouble();
    const at::Tensor g = grads[0].to(torch::kFloat);
    const bool need_h = ctx->needs_input_grad(0);
    const bool need_w = ctx->needs_input_grad(1);
    at::Tensor grad_h = need_h ? torch::empty_like(hidden) : at::Tensor();
    at::Tensor grad_w =
        need_w ? torch::zeros(weight.sizes(), weight.options().dtype(torch::kFloat)) : at::Tensor();
    const int64_t n = hidden.size(0);
    const bool reduced = Reduced(weight, temperature);
    for (int64_t s = 0; s < n; s += chunk) {
      const int64_t len = std::min(chunk, n - s);
      at::Tensor h = hidden.narrow(0, s, len);
      at::Tensor gc = g.narrow(0, s, len).unsqueeze(1);
      at::Tensor t = targets.narrow(0, s, len).unsqueeze(1);
      if (reduced) {
        // d logp(t) / d logits = onehot(t) - p = -q, where q is p with p(t) - 1 in the target
        // column (from forward's float32 log p(t)); dh = -g * (q @ W), dW = -(q^T @ (g * h)).
        at::Tensor q = torch::softmax(torch::matmul(h, weight.t()), -1);
        const at::Tensor logp = saved[3].narrow(0, s, len).unsqueeze(1);
        q.scatter_(1, t, (torch::exp(logp) - 1.0).to(q.scalar_type()));
        if (need_h) {
          grad_h.narrow(0, s, len).copy_(torch::matmul(q, weight).to(torch::kFloat) * -gc);
        }
        if (need_w) {
          grad_w.add_(torch::matmul(q.t(), (h.to(torch::kFloat) * -gc).to(h.scalar_type()))
                          .to(torch::kFloat));
        }
        continue;
      }
      const at::Tensor& lse = saved[3];
      // d logp(t) / d logits = onehot(t) - softmax(logits).
      at::Tensor d =
          -torch::exp(ChunkLogits(h, weight, temperature) - lse.narrow(0, s, len).unsqueeze(1)) *
          gc;
      d.scatter_add_(1, t, gc);
      if (temperature != 1.0) d = d / temperature;
      at::Tensor dw = d.to(weight.scalar_type());
      if (need_h) grad_h.narrow(0, s, len).copy_(torch::matmul(dw, weight));
      if (need_w) grad_w.add_(torch::matmul(dw.t(), h).to(torch::kFloat));
    }
    if (need_w) grad_w = grad_w.to(weight.scalar_type());
    return {grad_h, grad_w, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor ChunkedSelectedLogProbs(const at::Tensor& hidden, const at::Tensor& weight,
                                   const at::Tensor& targets, int64_t chunk_tokens,
                                   double temperature) {
  return ChunkedLogProbFn::apply(hidden, weight, targets.to(torch::kLong), chunk_tokens,
                                 temperature);
}

}  // namespace allot::models
