// The registries of advantage estimators and policy losses (trainer/grpo/advantage_estimators.h,
// policy_losses.h): a variant registered here, as a user would register one, is selectable by
// its name in the grpo section, computes through the learner's entry points, and its no-effect
// rule is what the recipe check reports (apps/engine_grpo.cc reports VariantNoEffects).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/config/binder.h"
#include "core/config/node.h"
#include "trainer/grpo/advantage_estimators.h"
#include "trainer/grpo/advantages.h"
#include "trainer/grpo/grpo_config.h"
#include "trainer/grpo/policy_loss.h"
#include "trainer/grpo/policy_losses.h"

namespace allot::trainer::grpo {
namespace {

// RLOO's leave-one-out baseline: A_i = r_i - mean of the others. Ignores step rewards.
AdvantageOutputs LeaveOneOut(const AdvantageInputs& in) {
  AdvantageOutputs out;
  out.outcome.assign(in.rewards.size(), 0.0);
  for (size_t i = 0; i < in.rewards.size(); ++i) {
    double sum = 0.0;
    int n = 0;
    for (size_t j = 0; j < in.rewards.size(); ++j) {
      if (j == i || in.group[j] != in.group[i]) continue;
      sum += in.rewards[j];
      ++n;
    }
    if (n > 0) out.outcome[i] = in.rewards[i] - sum / n;
  }
  return out;
}

// REINFORCE on the token ratio, no clip: reads neither clip_eps nor clip_eps_high.
PolicyTokenLoss Reinforce(const PolicyTokenInputs& in) {
  const at::Tensor ratio = torch::exp((in.logp - in.old_logp) * in.mask);
  return {-ratio * in.advantages, ratio};
}

// Once per process: the registries are global and gtest may repeat a test.
void RegisterTestVariants() {
  static const bool registered = [] {
    Status a = RegisterAdvantageEstimator({
        .name = "test_rloo",
        .doc = "leave-one-out baseline",
        .compute = LeaveOneOut,
        .no_effect =
            [](const GrpoConfig&) {
              return std::vector<NoEffect>{
                  {"step_advantages", "with grpo.advantage_estimator: test_rloo"}};
            },
    });
    Status l =
        RegisterPolicyLoss({.name = "test_reinforce", .doc = "no clip", .per_token = Reinforce});
    EXPECT_TRUE(a.ok()) << a.ToString();
    EXPECT_TRUE(l.ok()) << l.ToString();
    return true;
  }();
  (void)registered;
}

Result<GrpoConfig> LoadGrpo(const std::string& yaml) {
  ALLOT_ASSIGN_OR_RETURN(config::ConfigNode node, config::ParseYaml(yaml, "grpo.yaml"));
  GrpoConfig g;
  ALLOT_RETURN_IF_ERROR(config::Load(node, g));
  return g;
}

bool Flags(const std::vector<NoEffect>& rules, const std::string& key, const std::string& why) {
  return std::any_of(rules.begin(), rules.end(), [&](const NoEffect& n) {
    return n.key == key && n.why.find(why) != std::string::npos;
  });
}

// Catches: a built-in wired to the other normalisation, or step advantages dropped.
TEST(AdvantageEstimatorRegistryTest, BuiltInsAreGrpoAndDrGrpo) {
  const std::vector<double> r = {1, 0, 0, 1, 3};
  const std::vector<int64_t> g = {0, 0, 0, 0, 0};
  const std::vector<std::vector<double>> steps = {{1.0, 0.0}, {0.5}, {}, {}, {2.0}};
  for (const auto& [name, normalize] : {std::pair{"grpo", true}, std::pair{"dr_grpo", false}}) {
    auto e = FindAdvantageEstimator(name);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    const AdvantageOutputs out = (*e)->compute({r, g, steps});
    EXPECT_EQ(out.outcome, GroupAdvantages(r, g, {.normalize_std = normalize})) << name;
    EXPECT_EQ(out.step, StepAdvantages(steps, g, {.normalize_std = normalize})) << name;
    EXPECT_TRUE((*e)->compute({r, g, {}}).step.empty()) << name;  // step advantages off
  }
  EXPECT_NE(GroupAdvantages(r, g, {.normalize_std = true}),
            GroupAdvantages(r, g, {.normalize_std = false}));
}

// Catches: a registered estimator that the grpo section refuses (choices fixed at build time),
// that the learner's lookup does not find, or whose no-effect rule is not reported.
TEST(AdvantageEstimatorRegistryTest, RegisteredEstimatorIsSelectableAndItsRuleReported) {
  RegisterTestVariants();
  auto g = LoadGrpo("advantage_estimator: test_rloo\n");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->advantage_estimator, "test_rloo");
  auto e = FindAdvantageEstimator(g->advantage_estimator);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  const AdvantageOutputs out = (*e)->compute({{1, 0, 2, 5}, {0, 0, 0, 1}, {}});
  EXPECT_EQ(out.outcome, (std::vector<double>{0.0, -1.5, 1.5, 0.0}));
  EXPECT_TRUE(Flags(VariantNoEffects(*g), "step_advantages", "advantage_estimator: test_rloo"));
  // The rule is the variant's: under the built-in it is not reported.
  g->advantage_estimator = "grpo";
  EXPECT_FALSE(Flags(VariantNoEffects(*g), "step_advantages", ""));
  // A name is registered once.
  EXPECT_FALSE(RegisterAdvantageEstimator({.name = "grpo", .compute = LeaveOneOut}).ok());
  EXPECT_FALSE(RegisterAdvantageEstimator({.name = "no_compute"}).ok());
}

// Catches: a registered loss that ComputePolicyLoss does not dispatch to, or clip keys that a
// loss without a clip silently ignores.
TEST(GrpoLossRegistryTest, RegisteredLossIsSelectableAndTheKeysItIgnoresAreReported) {
  RegisterTestVariants();
  auto g = LoadGrpo("policy_loss: test_reinforce\nupdates_per_batch: 2\n");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->policy_loss, "test_reinforce");
  // log ratio 0.5 on both tokens, A = 1: ppo_clip clips at 1.2, REINFORCE does not.
  const at::Tensor logp = torch::full({1, 2}, 0.5f).requires_grad_(true);
  const PolicyLossInputs in{.logp = logp,
                            .old_logp = torch::zeros({1, 2}),
                            .advantages = torch::ones({1, 2}),
                            .mask = torch::ones({1, 2})};
  PolicyLossOptions o{.policy_loss = g->policy_loss, .truncated_is = false};
  auto r = ComputePolicyLoss(in, o, TotalsOf(in.mask));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_NEAR(r->loss.item<double>(), -std::exp(0.5), 1e-6);
  o.policy_loss = "ppo_clip";
  EXPECT_NEAR(ComputePolicyLoss(in, o, TotalsOf(in.mask))->loss.item<double>(), -1.2, 1e-6);
  // test_reinforce reads no clip: clip_eps and clip_eps_high, read by ppo_clip, change nothing.
  const std::vector<NoEffect> rules = VariantNoEffects(*g);
  EXPECT_TRUE(Flags(rules, "clip_eps", "with grpo.policy_loss: test_reinforce"));
  EXPECT_TRUE(Flags(rules, "clip_eps_high", "with grpo.policy_loss: test_reinforce"));
  g->policy_loss = "ppo_clip";
  EXPECT_TRUE(VariantNoEffects(*g).empty());  // two passes: the clip acts
  g->updates_per_batch = 1;
  EXPECT_TRUE(Flags(VariantNoEffects(*g), "clip_eps", "updates_per_batch is 1"));
  g->policy_loss = "gspo";
  EXPECT_TRUE(Flags(VariantNoEffects(*g), "policy_loss", "updates_per_batch is 1"));
}

// Catches: an unknown name that fails without saying what there is, at load or at lookup.
TEST(GrpoLossRegistryTest, UnknownNamesListTheRegisteredOnes) {
  RegisterTestVariants();
  auto a = LoadGrpo("advantage_estimator: rloo\n");
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("grpo, dr_grpo, test_rloo"), std::string::npos)
      << a.status().message();
  auto p = LoadGrpo("policy_loss: cispo\n");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("ppo_clip, gspo, test_reinforce"), std::string::npos)
      << p.status().message();
  auto e = FindAdvantageEstimator("rloo");
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("grpo.advantage_estimator: 'rloo' is not registered "
                                      "(registered: grpo, dr_grpo, test_rloo)"),
            std::string::npos)
      << e.status().message();
  PolicyLossInputs in{.logp = torch::zeros({1, 1}),
                      .old_logp = torch::zeros({1, 1}),
                      .advantages = torch::ones({1, 1}),
                      .mask = torch::ones({1, 1})};
  auto r = ComputePolicyLoss(in, {.policy_loss = "cispo"}, TotalsOf(in.mask));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("(registered: ppo_clip, gspo, test_reinforce)"),
            std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace allot::trainer::grpo
