// Policy losses by name (grpo.policy_loss), as verl's register_policy_loss: a variant is one
// function from the token log-probs and advantages to the per-token surrogate and the ratio it
// used, and the recipe keys it ignores are refused beside it. What every variant shares, the
// truncated IS weight, the KL term and the aggregation, is ComputePolicyLoss's (policy_loss.h).
//
// Built-ins, per token t of output i with advantage A_{i,t}:
//   ppo_clip  -min(rho A, clip(rho, 1 - clip_eps, 1 + clip_eps_high) A), rho = pi_theta /
//             pi_old per token (PPO, GRPO; clip_eps_high > clip_eps is DAPO's clip-higher).
//   gspo      the same clip on rho_i = exp(mean_t log(pi_theta / pi_old)) (GSPO, Zheng et al.,
//             2025), applied to every token as sg[rho_i] * pi_theta(y_t) / sg[pi_theta(y_t)]
//             (GSPO-token), so per-token (step) advantages still work.
//
// The registry is process-wide; the built-ins are in it before the first lookup. Registering is
// not thread-safe: register at start-up (or in a test) before any lookup from another thread.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "trainer/grpo/advantage_estimators.h"  // NoEffect

namespace allot::trainer::grpo {

// [B, T] float32 on one device; only `logp` carries the graph (old_logp and advantages are
// detached, mask is 0/1 as float).
struct PolicyTokenInputs {
  at::Tensor logp;
  at::Tensor old_logp;
  at::Tensor advantages;
  at::Tensor mask;
  double clip_low = 0.2;   // grpo.clip_eps
  double clip_high = 0.2;  // grpo.clip_eps_high
};

struct PolicyTokenLoss {
  at::Tensor per_token;  // [B, T], differentiable; masked and aggregated by the caller
  at::Tensor ratio;      // [B, T], the rho the surrogate used (for the clip statistics)
};

struct PolicyLossVariant {
  std::string name;
  std::string doc;  // one line: what it computes and whose it is
  std::function<PolicyTokenLoss(const PolicyTokenInputs&)> per_token;
  // The grpo keys it reads beyond the common ones (e.g. clip_eps).
  std::vector<std::string> reads;
  // The keys that have no effect under this loss, given the resulting config. Null: none.
  std::function<std::vector<NoEffect>(const GrpoConfig&)> no_effect;
};

// Adds `variant`; an empty name, a null per_token or a name already registered is an error.
Status RegisterPolicyLoss(PolicyLossVariant variant);

// The loss of that name; unknown: an error that lists the registered names.
Result<const PolicyLossVariant*> FindPolicyLoss(const std::string& name);

// The registered names, in registration order (the built-ins first).
std::vector<std::string> PolicyLossNames();

// What the chosen advantage estimator and policy loss say has no effect under `g`; unknown
// names yield nothing here (the config loader refuses them).
std::vector<NoEffect> VariantNoEffects(const GrpoConfig& g);

}  // namespace allot::trainer::grpo
