// Why: torch::optim::AdamW::step() loops over the parameters and launches about ten kernels per
// parameter; with LoRA's 336 small tensors a GPU step was ~3,400 launches and the GPU sat idle
// ~50 ms a step waiting for the host. The _foreach_ operations below are multi-tensor kernels on
// CUDA (a few launches per group). On the CPU they fall back to a per-tensor loop of the same
// operations with the same scalars as step(), so the update is bit-identical to step() there.
#include "trainer/optim/multi_tensor_adamw.h"

#include <torch/torch.h>

#include <cmath>
#include <map>
#include <memory>
#include <vector>

#include "trainer/optim/optimizer_state_key.h"

namespace allot::trainer {
namespace {

using torch::optim::AdamWOptions;
using torch::optim::AdamWParamState;

// The parameters of one group that share a step count, with their gradients and state.
struct Bucket {
  std::vector<at::Tensor> params;
  std::vector<at::Tensor> grads;
  std::vector<at::Tensor> exp_avgs;
  std::vector<at::Tensor> exp_avg_sqs;
  std::vector<AdamWParamState*> states;
};

// One update of a bucket, step() (LibTorch 1.13 and 2.x, amsgrad off) operation by operation:
//   exp_avg.mul_(beta1).add_(grad, 1 - beta1)
//   exp_avg_sq.mul_(beta2).addcmul_(grad, grad, 1 - beta2)
//   denom = (exp_avg_sq.sqrt() / sqrt(bias_correction2)).add_(eps)
//   p.addcdiv_(exp_avg, denom, -lr / bias_correction1)
void Update(const AdamWOptions& o, int64_t step, Bucket& b) {
  for (AdamWParamState* s : b.states) s->step(step);
  const double beta1 = std::get<0>(o.betas());
  const double beta2 = std::get<1>(o.betas());
  const double bias_correction1 = 1 - std::pow(beta1, step);
  const double bias_correction2 = 1 - std::pow(beta2, step);
  at::_foreach_mul_(b.exp_avgs, at::Scalar(beta1));
  at::_foreach_add_(b.exp_avgs, b.grads, at::Scalar(1 - beta1));
  at::_foreach_mul_(b.exp_avg_sqs, at::Scalar(beta2));
  at::_foreach_addcmul_(b.exp_avg_sqs, b.grads, b.grads, at::Scalar(1 - beta2));
  std::vector<at::Tensor> denoms = at::_foreach_sqrt(b.exp_avg_sqs);
  at::_foreach_div_(denoms, at::Scalar(std::sqrt(bias_correction2)));
  at::_foreach_add_(denoms, at::Scalar(o.eps()));
  const double step_size = o.lr() / bias_correction1;
  at::_foreach_addcdiv_(b.params, b.exp_avgs, denoms, at::Scalar(-step_size));
}

}  // namespace

void StepAdamW(torch::optim::AdamW& optimizer) {
  // amsgrad keeps a running maximum (max_out) that this step does not implement: the whole
  // optimizer takes LibTorch's own step then.
  for (const auto& group : optimizer.param_groups()) {
    if (static_cast<const AdamWOptions&>(group.options()).amsgrad()) {
      optimizer.step();
      return;
    }
  }
  torch::NoGradGuard no_grad;
  auto& state = optimizer.state();
  for (auto& group : optimizer.param_groups()) {
    const auto& o = static_cast<const AdamWOptions&>(group.options());
    std::map<int64_t, Bucket> buckets;  // by the step count before this step; normally one
    for (const auto& p : group.params()) {
      const at::Tensor& grad = p.grad();
      if (!grad.defined()) continue;
      TORCH_CHECK(!grad.is_sparse(), "AdamW does not support sparse gradients");
      const OptimizerStateKey key = StateKey(p);
      auto it = state.find(key);
      if (it == state.end()) {  // as step(): created on the first update with a gradient
        auto s = std::make_unique<AdamWParamState>();
        s->step(0);
        s->exp_avg(torch::zeros_like(p, at::MemoryFormat::Preserve));
        s->exp_avg_sq(torch::zeros_like(p, at::MemoryFormat::Preserve));
        it = state.emplace(key, std::move(s)).first;
      }
      auto& s = static_cast<AdamWParamState&>(*it->second);
      Bucket& b = buckets[s.step()];
      b.params.push_back(p);
      b.grads.push_back(grad);
      b.exp_avgs.push_back(s.exp_avg());
      b.exp_avg_sqs.push_back(s.exp_avg_sq());
      b.states.push_back(&s);
    }
    for (auto& [step, b] : buckets) {
      // step() decays each parameter just before its own update: the same order per parameter.
      if (o.weight_decay() != 0) {
        at::_foreach_mul_(b.params, at::Scalar(1 - o.lr() * o.weight_decay()));
      }
      Update(o, step + 1, b);
    }
  }
}

}  // namespace allot::trainer
