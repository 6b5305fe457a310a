#include "trainer/grpo/policy_losses.h"

#include <torch/torch.h>

#include <algorithm>

#include "trainer/grpo/grpo_config.h"
#include "trainer/grpo/variant_registry.h"

namespace allot::trainer::grpo {

namespace {

// The clipped surrogate on a given ratio.
at::Tensor ClippedSurrogate(const at::Tensor& ratio, const PolicyTokenInputs& in) {
  const at::Tensor clipped = torch::clamp(ratio, 1.0 - in.clip_low, 1.0 + in.clip_high);
  return -torch::min(ratio * in.advantages, clipped * in.advantages);
}

PolicyTokenLoss PpoClip(const PolicyTokenInputs& in) {
  const at::Tensor ratio = torch::exp((in.logp - in.old_logp) * in.mask);
  return {ClippedSurrogate(ratio, in), ratio};
}

PolicyTokenLoss Gspo(const PolicyTokenInputs& in) {
  // Length-normalised sequence ratio, spread over tokens as in GSPO-token.
  const at::Tensor log_ratio = (in.logp - in.old_logp) * in.mask;
  const at::Tensor seq_log_ratio = log_ratio.sum(1, true) / in.mask.sum(1, true).clamp_min(1.0);
  const at::Tensor ratio = torch::exp(seq_log_ratio.detach() + in.logp - in.logp.detach());
  return {ClippedSurrogate(ratio, in), ratio};
}

// The PPO clip and GSPO's sequence ratio act only from the second pass over a batch on. With
// one pass (updates_per_batch: 1) UpdatePolicy takes the old log-probs as the detached current
// ones (policy_update.cc), so the token ratio r = exp(logp - sg(logp)) is exactly 1, and so is
// GSPO's exp(mean of zeros + logp - sg(logp)), with the same gradient A * grad(logp).
// clip(1, 1 - clip_eps, 1 + clip_eps_high) = 1 for any eps >= 0: min(r A, clip(r) A) never
// takes the clipped side. Truncated IS and stale rollouts do not change that: the TIS weight
// compares the learner's log-probs with the rollout engine's and multiplies the loss outside
// the clip (policy_loss.cc), and stale segments are dropped or corrected by that weight,
// never through the ratio.
constexpr const char* kOnePass =
    "while grpo.updates_per_batch is 1 (one pass: the PPO ratio is exactly 1)";

std::vector<NoEffect> ClipOnePass(const GrpoConfig& g) {
  if (g.updates_per_batch != 1) return {};
  return {{"clip_eps", kOnePass}, {"clip_eps_high", kOnePass}};
}

VariantRegistry<PolicyLossVariant>& Registry() {
  static VariantRegistry<PolicyLossVariant>* registry = [] {
    auto* r = new VariantRegistry<PolicyLossVariant>("grpo.policy_loss");
    (void)r->Register({
        .name = "ppo_clip",
        .doc = "PPO clip on the token ratio (GRPO; clip_eps_high > clip_eps: DAPO clip-higher)",
        .per_token = PpoClip,
        .reads = {"clip_eps", "clip_eps_high"},
        .no_effect = ClipOnePass,
    });
    (void)r->Register({
        .name = "gspo",
        .doc = "PPO clip on the length-normalised sequence ratio (GSPO-token)",
        .per_token = Gspo,
        .reads = {"clip_eps", "clip_eps_high"},
        .no_effect =
            [](const GrpoConfig& g) {
              std::vector<NoEffect> out = ClipOnePass(g);
              // One pass: GSPO's ratio is 1 as the token ratio is, with the same gradient.
              if (g.updates_per_batch == 1) out.push_back({"policy_loss", kOnePass});
              return out;
            },
    });
    return r;
  }();
  return *registry;
}

}  // namespace

Status RegisterPolicyLoss(PolicyLossVariant variant) {
  if (!variant.per_token) {
    return InvalidArgument("grpo.policy_loss: '" + variant.name + "' has no per_token function");
  }
  return Registry().Register(std::move(variant));
}

Result<const PolicyLossVariant*> FindPolicyLoss(const std::string& name) {
  return Registry().Find(name);
}

std::vector<std::string> PolicyLossNames() { return Registry().Names(); }

namespace {

// The variant's own rules, then every key another registered variant reads and this one does
// not: with `choice` it changes nothing.
template <typename Variant>
void Collect(const Variant& chosen, const std::vector<const Variant*>& all,
             const std::string& choice, const GrpoConfig& g, std::vector<NoEffect>* out) {
  if (chosen.no_effect) {
    for (NoEffect& n : chosen.no_effect(g)) out->push_back(std::move(n));
  }
  std::vector<std::string> seen = chosen.reads;
  for (const Variant* v : all) {
    for (const std::string& k : v->reads) {
      if (std::find(seen.begin(), seen.end(), k) != seen.end()) continue;
      seen.push_back(k);
      out->push_back({k, "with " + choice + ": " + chosen.name});
    }
  }
}

template <typename Variant>
std::vector<const Variant*> All(const std::vector<std::string>& names,
                                Result<const Variant*> (*find)(const std::string&)) {
  std::vector<const Variant*> out;
  for (const std::string& n : names) out.push_back(*find(n));
  return out;
}

}  // namespace

std::vector<NoEffect> VariantNoEffects(const GrpoConfig& g) {
  std::vector<NoEffect> out;
  if (auto e = FindAdvantageEstimator(g.advantage_estimator); e.ok()) {
    Collect(**e, All(AdvantageEstimatorNames(), &FindAdvantageEstimator),
            "grpo.advantage_estimator", g, &out);
  }
  if (auto l = FindPolicyLoss(g.policy_loss); l.ok()) {
    Collect(**l, All(PolicyLossNames(), &FindPolicyLoss), "grpo.policy_loss", g, &out);
  }
  return out;
}

}  // namespace allot::trainer::grpo
