#include "rewards/composed_reward.h"

#include <gtest/gtest.h>

#include "core/config/binder.h"
#include "core/config/node.h"

namespace allot::rewards {
namespace {

TEST(ComposedRewardTest, DefaultIsCogerEq3) {
  Result<std::unique_ptr<ComposedReward>> r = ComposedReward::Create(RewardConfig{});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  RewardInput in;
  in.response = "<question_level>L2</question_level>";
  in.final_response = "\\boxed{12}";
  in.reference = "12";
  in.level_correct = {true, true, true, true};
  Result<RewardBreakdown> b = (*r)->Compute(in);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->values.at("format"), 1.0);
  EXPECT_EQ(b->values.at("accuracy"), 1.0);
  EXPECT_NEAR(b->values.at("hierarchy"), -0.2, 1e-12);
  EXPECT_NEAR(b->total, 1.8, 1e-12);
  EXPECT_EQ(b->ToString().substr(0, 9), "total=1.8");
}

TEST(ComposedRewardTest, WeightsFromYaml) {
  auto root = config::ParseYaml(R"(
terms:
  - {name: accuracy, weight: 1.0}
  - {name: api_cost, weight: 0.5}
  - {name: tokens, weight: 0.1}
answer: {format: number}
cost: {usd_scale: 0.01, tokens_scale: 1000}
)",
                                "rewards.yaml");
  ASSERT_TRUE(root.ok());
  RewardConfig cfg;
  Status s = config::Load(*root, cfg);
  ASSERT_TRUE(s.ok()) << s.ToString();
  auto r = ComposedReward::Create(cfg);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->num_terms(), 3u);
  RewardInput in;
  in.response = "#### 7";
  in.reference = "7";
  in.usage.cost_usd = 0.02;  // two cents
  in.usage.prompt_tokens = 1500;
  in.usage.completion_tokens = 500;
  Result<RewardBreakdown> b = (*r)->Compute(in);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->values.at("accuracy"), 1.0);
  EXPECT_NEAR(b->values.at("api_cost"), -2.0, 1e-12);
  EXPECT_NEAR(b->values.at("tokens"), -2.0, 1e-12);
  EXPECT_NEAR(b->total, 1.0 - 1.0 - 0.2, 1e-12);
}

// rewards.cost.when: correct. A wrong answer pays nothing in the cost terms, so an episode
// that skips the work (no call, no cost) scores what a wrong one that did the work scores;
// a correct one pays its cost. Fails if the gate is ignored (the wrong, expensive episode
// would score -2) or applied to correct episodes.
TEST(ComposedRewardTest, CostOnlyForCorrectAnswersWhenAsked) {
  RewardConfig cfg;
  cfg.terms = {{"accuracy", 1.0}, {"api_cost", 0.5}};
  cfg.answer.format = "number";
  cfg.cost.usd_scale = 0.01;
  cfg.cost.when = "correct";
  auto r = ComposedReward::Create(cfg);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  RewardInput in;
  in.response = "#### 7";
  in.reference = "7";
  in.usage.cost_usd = 0.04;
  Result<RewardBreakdown> right = (*r)->Compute(in);
  ASSERT_TRUE(right.ok());
  EXPECT_NEAR(right->values.at("api_cost"), -4.0, 1e-12);
  EXPECT_NEAR(right->total, 1.0 - 2.0, 1e-12);
  in.response = "#### 8";
  Result<RewardBreakdown> wrong = (*r)->Compute(in);
  ASSERT_TRUE(wrong.ok());
  EXPECT_EQ(wrong->values.at("api_cost"), 0.0);
  EXPECT_EQ(wrong->total, 0.0);
  in.usage.cost_usd = 0.0;  // nothing done
  EXPECT_EQ((*r)->Compute(in)->total, wrong->total);
  // when: always (the default) charges the wrong answer too.
  cfg.cost.when = "always";
  auto always = ComposedReward::Create(cfg);
  ASSERT_TRUE(always.ok());
  in.usage.cost_usd = 0.04;
  EXPECT_NEAR((*always)->Compute(in)->total, -2.0, 1e-12);
}

TEST(ComposedRewardTest, CostWhenCorrectNeedsAccuracyAndACostTerm) {
  RewardConfig cfg;
  cfg.cost.when = "correct";
  cfg.terms = {{"accuracy", 1.0}};
  auto r = ComposedReward::Create(cfg);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().ToString().find("rewards.cost.when"), std::string::npos);
  EXPECT_NE(r.status().ToString().find("no effect"), std::string::npos);
  cfg.terms = {{"api_cost", 1.0}};
  r = ComposedReward::Create(cfg);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().ToString().find("needs the accuracy term"), std::string::npos);
}

TEST(ComposedRewardTest, AnswerFormatFromConfigUnlessTheEpisodeNamesOne) {
  RewardConfig cfg;
  cfg.terms = {{"accuracy", 1.0}};
  cfg.answer.format = "choice";
  cfg.answer.max_choice = "D";
  auto r = ComposedReward::Create(cfg);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  RewardInput in;
  in.response = "Options (A) and (B) fail; the answer is (C).";
  in.reference = "C";
  EXPECT_EQ((*r)->Compute(in)->values.at("accuracy"), 1.0);
  in.response = "The answer is (E).";  // outside A-D
  in.reference = "E";
  EXPECT_EQ((*r)->Compute(in)->values.at("accuracy"), 0.0);
  in.format = AnswerFormat::kYesNo;
  in.response = "Yes.";
  in.reference = "yes";
  EXPECT_EQ((*r)->Compute(in)->values.at("accuracy"), 1.0);
  cfg.answer.max_choice = "1";
  EXPECT_FALSE(ComposedReward::Create(cfg).ok());
}

TEST(ComposedRewardTest, ConfigErrorsNameTheField) {
  auto root = config::ParseYaml("terms:\n  - {name: acuracy}\n", "r.yaml");
  ASSERT_TRUE(root.ok());
  RewardConfig cfg;
  Status s = config::Load(*root, cfg);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("r.yaml:2"), std::string::npos) << s.message();

  RewardConfig twice;
  twice.terms = {{"format", 1}, {"format", 2}};
  EXPECT_NE(ComposedReward::Create(twice).status().message().find("rewards.terms[1].name"),
            std::string::npos);
  RewardConfig prm;
  prm.terms = {{"prm", 1}};
  EXPECT_FALSE(ComposedReward::Create(prm).ok());  // no transport
  RewardConfig solver;
  solver.hierarchy.oracle = "solver";
  EXPECT_FALSE(ComposedReward::Create(solver).ok());  // no level solver
}

TEST(ComposedRewardTest, TermFailureNamesTheTerm) {
  RewardConfig cfg;
  cfg.terms = {{"prm", 1.0}};
  RewardDeps deps;
  deps.prm_transport = [](const std::string&, const nlohmann::json&) -> Result<nlohmann::json> {
    return Unavailable("prm endpoint down");
  };
  auto r = ComposedReward::Create(cfg, deps);
  ASSERT_TRUE(r.ok());
  RewardInput in;
  in.question = "q";
  in.steps = {"s"};
  Status s = (*r)->Compute(in).status();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("reward term 'prm'"), std::string::npos);
}

TEST(CostRewardTest, TermsAndEnergyEstimate) {
  RewardInput in;
  in.usage.energy_joules = 2500;
  EXPECT_NEAR(*EnergyReward().Compute(in), -2.5, 1e-12);
  in.usage.cost_usd = -1;
  EXPECT_FALSE(ApiCostReward().Compute(in).ok());
  // R2-Reasoner Sec. 5.1: 2 * 7e9 params * 1000 tokens * 400 W / 312e12 FLOP/s.
  EXPECT_NEAR(EstimateEnergyJoules(7e9, 1000), 2.0 * 7e9 * 1000 * 400 / 312e12, 1e-9);
}

}  // namespace
}  // namespace allot::rewards
