// The GRPO policy loss family on per-token tensors [B, T] (B sequences, T target positions).
//
// CogER Eq. 10 / R2-Reasoner Sec. 4.3 / DeepTool Eq. 9-11 (notes.md) share one clipped
// surrogate, per token t of output i with advantage A_{i,t}:
//   L_{i,t} = -w_{i,t} * min(rho_{i,t} A_{i,t}, clip(rho_{i,t}, 1 - eps_low, 1 + eps_high) A_{i,t})
//             + beta * KL_{i,t}
// and differ in:
//   * the surrogate, chosen by name (grpo.policy_loss; policy_losses.h): ppo_clip, rho =
//     pi_theta / pi_old per token (PPO, GRPO; eps_high > eps_low: DAPO clip-higher), or gspo,
//     the length-normalised sequence ratio (GSPO-token). A registered loss replaces the clipped
//     term above; the weight w, the KL term and the aggregation below are every loss's.
//   * w: truncated importance sampling between the rollout endpoint and the learner (Yao et al.,
//     2025, "TIS"): w = min(pi_old_learner / pi_rollout, C), detached. The sampler's numerics
//     (batching, kernels, a stale adapter) differ from the learner's; w corrects the gap.
//   * KL: k1/k2/k3 to the reference (kl_estimator.h); beta = 0 needs no reference log-probs.
//   * aggregation (aggregate() below): token_mean (DAPO), seq_mean_token_mean (GRPO, CogER Eq. 10's
//     1/G sum over outputs of a per-output mean), seq_mean_token_sum (Dr.GRPO: a constant
//     length divisor, so long outputs are not under-weighted).
// Only positions with mask = 1 (trainable policy tokens) carry loss.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>

#include "core/status.h"
#include "trainer/grpo/kl_estimator.h"

namespace allot::trainer::grpo {

enum class Aggregation { kTokenMean, kSeqMeanTokenMean, kSeqMeanTokenSum };

Result<Aggregation> ParseAggregation(const std::string& name);

struct PolicyLossOptions {
  double clip_low = 0.2;
  double clip_high = 0.2;
  std::string policy_loss = "ppo_clip";  // a name registered in policy_losses.h
  Aggregation aggregation = Aggregation::kSeqMeanTokenMean;
  double norm_len = 1.0;  // seq_mean_token_sum divisor
  double kl_coef = 0.0;
  KlEstimator kl_estimator = KlEstimator::kK3;
  bool truncated_is = true;
  double truncated_is_cap = 2.0;
};

// All [B, T] float32 on one device. `logp` carries the graph; the rest are treated as constants.
struct PolicyLossInputs {
  at::Tensor logp;          // learner, current parameters
  at::Tensor old_logp;      // learner, parameters at the start of the batch
  at::Tensor rollout_logp;  // endpoint's sampling log-probs; undefined: no TIS
  at::Tensor ref_logp;      // reference policy; needed when kl_coef > 0
  at::Tensor advantages;
  at::Tensor mask;  // 1 on trainable tokens
};

// Denominators over the whole batch, so that micro-batches (gradient accumulation) sum to the
// loss of the full batch exactly.
struct AggregationTotals {
  double tokens = 0.0;     // sum of the mask
  double sequences = 0.0;  // sequences with at least one trainable token
};

struct PolicyLossStats {
  double policy_loss = 0.0;     // the surrogate part, aggregated
  double kl = 0.0;              // mean KL per trainable token
  double clip_frac_low = 0.0;   // tokens where the low clip is active (rho < 1 - eps, A < 0)
  double clip_frac_high = 0.0;  // tokens where the high clip is active (rho > 1 + eps, A > 0)
  double ratio_mean = 0.0;
  double is_weight_mean = 0.0;  // TIS weights, mean over trainable tokens
  double is_truncated_frac = 0.0;
  double tokens = 0.0;
};

struct PolicyLossResult {
  at::Tensor loss;  // scalar, differentiable
  PolicyLossStats stats;
};

// The per-token loss aggregated with `totals` of the whole batch.
Result<PolicyLossResult> ComputePolicyLoss(const PolicyLossInputs& in,
                                           const PolicyLossOptions& options,
                                           const AggregationTotals& totals);

// Sum of per_token * mask divided as `aggregation` says.
at::Tensor Aggregate(const at::Tensor& per_token, const at::Tensor& mask, Aggregation aggregation,
                     double norm_len, const AggregationTotals& totals);

// Totals of a [B, T] mask.
AggregationTotals TotalsOf(const at::Tensor& mask);

}  // namespace allot::trainer::grpo
