#include "trainer/grpo/policy_loss.h"

#include <torch/torch.h>

#include <algorithm>

#include "trainer/grpo/policy_losses.h"

namespace allot::trainer::grpo {

Result<Aggregation> ParseAggregation(const std::string& name) {
  if (name == "token_mean") return Aggregation::kTokenMean;
  if (name == "seq_mean_token_mean") return Aggregation::kSeqMeanTokenMean;
  if (name == "seq_mean_token_sum") return Aggregation::kSeqMeanTokenSum;
  return InvalidArgument("grpo.loss_aggregation: '" + name +
                         "' is not one of token_mean, seq_mean_token_mean, seq_mean_token_sum");
}

AggregationTotals TotalsOf(const at::Tensor& mask) {
  AggregationTotals t;
  t.tokens = mask.sum().item<double>();
  t.sequences = (mask.sum(1) > 0).sum().item<double>();
  return t;
}

at::Tensor Aggregate(const at::Tensor& per_token, const at::Tensor& mask, Aggregation aggregation,
                     double norm_len, const AggregationTotals& totals) {
  const at::Tensor masked = per_token * mask;
  switch (aggregation) {
    case Aggregation::kTokenMean:
      return masked.sum() / std::max(totals.tokens, 1.0);
    case Aggregation::kSeqMeanTokenMean: {
      const at::Tensor per_seq = masked.sum(1) / mask.sum(1).clamp_min(1.0);
      return per_seq.sum() / std::max(totals.sequences, 1.0);
    }
    case Aggregation::kSeqMeanTokenSum:
      return masked.sum() / (std::max(totals.sequences, 1.0) * std::max(norm_len, 1.0));
  }
  return masked.sum();
}

Result<PolicyLossResult> ComputePolicyLoss(const PolicyLossInputs& in,
                                           const PolicyLossOptions& options,
                                           const AggregationTotals& totals) {
  if (!in.logp.defined() || !in.old_logp.defined() || !in.advantages.defined() ||
      !in.mask.defined()) {
    return InvalidArgument("policy loss: logp, old_logp, advantages and mask are required");
  }
  if (in.logp.sizes() != in.mask.sizes() || in.old_logp.sizes() != in.mask.sizes() ||
      in.advantages.sizes() != in.mask.sizes()) {
    return InvalidArgument("policy loss: logp, old_logp, advantages and mask differ in shape");
  }
  if (options.kl_coef > 0.0 && !in.ref_logp.defined()) {
    return InvalidArgument("policy loss: kl_coef > 0 needs the reference log-probs");
  }
  ALLOT_ASSIGN_OR_RETURN(const PolicyLossVariant* variant, FindPolicyLoss(options.policy_loss));
  const at::Tensor mask = in.mask.to(torch::kFloat32);
  const at::Tensor old = in.old_logp.detach();
  const at::Tensor adv = in.advantages.detach();
  PolicyTokenLoss surrogate = variant->per_token({.logp = in.logp,
                                                  .old_logp = old,
                                                  .advantages = adv,
                                                  .mask = mask,
                                                  .clip_low = options.clip_low,
                                                  .clip_high = options.clip_high});
  const at::Tensor ratio = surrogate.ratio;
  at::Tensor per_token = surrogate.per_token;

  PolicyLossResult result;
  PolicyLossStats& s = result.stats;
  const double n = std::max(mask.sum().item<double>(), 1.0);
  s.tokens = mask.sum().item<double>();

  at::Tensor is_weight;
  if (options.truncated_is && in.rollout_logp.defined()) {
    const at::Tensor raw = torch::exp(old - in.rollout_logp.detach());
    is_weight = torch::clamp_max(raw, options.truncated_is_cap) * mask + (1.0 - mask);
    s.is_weight_mean = (is_weight * mask).sum().item<double>() / n;
    s.is_truncated_frac =
        ((raw > options.truncated_is_cap).to(torch::kFloat32) * mask).sum().item<double>() / n;
    per_token = per_token * is_weight;
  } else {
    s.is_weight_mean = 1.0;
  }

  at::Tensor loss = Aggregate(per_token, mask, options.aggregation, options.norm_len, totals);
  s.policy_loss = loss.item<double>();

  if (options.kl_coef > 0.0) {
    const at::Tensor kl = KlPerToken(in.logp, in.ref_logp.detach(), options.kl_estimator);
    loss =
        loss + options.kl_coef * Aggregate(kl, mask, options.aggregation, options.norm_len, totals);
    s.kl = (kl.detach() * mask).sum().item<double>() / n;
  }

  {
    torch::NoGradGuard no_grad;
    const at::Tensor r = ratio.detach();
    const at::Tensor low = (r < 1.0 - options.clip_low) & (adv < 0);
    const at::Tensor high = (r > 1.0 + options.clip_high) & (adv > 0);
    s.clip_frac_low = (low.to(torch::kFloat32) * mask).sum().item<double>() / n;
    s.clip_frac_high = (high.to(torch::kFloat32) * mask).sum().item<double>() / n;
    s.ratio_mean = (r * mask).sum().item<double>() / n;
  }
  result.loss = loss;
  return result;
}

}  // namespace allot::trainer::grpo
