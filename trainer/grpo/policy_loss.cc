#include "trainer/grpo/policy_loss.h"

#include <torch/torch.h>

#include <algorithm>

namespace allot::trainer::grpo {

Result<Aggregation> ParseAggregation(const std::string& name) {
  if (name == "token_mean") return Aggregation::kTokenMean;
  if (name == "seq_mean_token_mean") return Aggregation::kSeqMeanTokenMean;
  if (name == "seq_mean_token_sum") return Aggregation::kSeqMeanTokenSum;
  return InvalidArgument("grpo.loss_aggregation: '" + name +
                         "' is not one of token_mean, seq_mean_token_mean, seq_mean_token_sum");
}

Result<RatioLevel> ParseRatioLevel(const std::string& name) {
  if (name == "token") return RatioLevel::kToken;
  if (name == "sequence") return RatioLevel::kSequence;
  return InvalidArgument("grpo.ratio_level: '" + name + "' is not one of token, sequence");
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
  const at::Tensor mask = in.mask.to(torch::kFloat32);
  const at::Tensor old = in.old_logp.detach();
  const at::Tensor adv = in.advantages.detach();
  const at::Tensor log_ratio = (in.logp - old) * mask;

  at::Tensor ratio;
  if (options.ratio_level == RatioLevel::kSequence) {
    // GSPO: length-normalised sequence ratio, spread over tokens as in GSPO-token.
    const at::Tensor seq_log_ratio = log_ratio.sum(1, true) / mask.sum(1, true).clamp_min(1.0);
    ratio = torch::exp(seq_log_ratio.detach() + in.logp - in.logp.detach());
  } else {
    ratio = torch::exp(log_ratio);
  }
  const at::Tensor clipped = torch::clamp(ratio, 1.0 - options.clip_low, 1.0 + options.clip_high);
  at::Tensor per_token = -torch::min(ratio * adv, clipped * adv);

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
