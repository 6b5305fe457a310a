// `allot reward`'s core: every component of one output under a recipe's reward config.
#include <gtest/gtest.h>

#include "envs/coger/reward_report.h"

namespace allot::envs::coger {
namespace {

double Term(const nlohmann::json& j, const std::string& name) {
  for (const auto& t : j["terms"]) {
    if (t["name"] == name) return t["value"].get<double>();
  }
  ADD_FAILURE() << "no term " << name;
  return -99;
}

// CogER Sec. 4.3: a query solvable at every level (L_min = 1) gets hierarchy rewards
// {0, -0.2, -0.4, -0.6} for L1..L4.
TEST(CogerRewardReportTest, PaperHierarchyExample) {
  const double expected[] = {0.0, -0.2, -0.4, -0.6};
  for (int level = 1; level <= 4; ++level) {
    RewardReportRequest req;
    req.pred = (level == 1 ? "\\boxed{4} " : "") + std::string("<question_level>L") +
               std::to_string(level) + "</question_level>";
    req.final_answer = level == 1 ? "" : "so \\boxed{4}";
    req.gold = "4";
    req.lmin = 1;
    auto j = ExplainReward(rewards::RewardConfig{}, req);
    ASSERT_TRUE(j.ok()) << j.status().ToString();
    EXPECT_NEAR(Term(*j, "hierarchy"), expected[level - 1], 1e-12) << "L" << level;
    EXPECT_EQ(Term(*j, "format"), 1.0);
    EXPECT_EQ(Term(*j, "accuracy"), 1.0);
    EXPECT_NEAR((*j)["total"].get<double>(), 2.0 + expected[level - 1], 1e-12);
    EXPECT_EQ((*j)["level_tag"]["level"], level);
  }
}

TEST(CogerRewardReportTest, LevelCorrectGivesLminAndEveryTermIsReported) {
  RewardReportRequest req;
  req.pred = "<question_level>L4</question_level>";
  req.final_answer = "\\boxed{7}";
  req.gold = "7";
  auto lc = ParseLevelCorrect("0, 0,1,1");
  ASSERT_TRUE(lc.ok());
  req.level_correct = *lc;
  auto j = ExplainReward(rewards::RewardConfig{}, req);
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ((*j)["lmin"], 3);
  EXPECT_EQ((*j)["lmin_source"], "--level-correct");
  EXPECT_NEAR(Term(*j, "hierarchy"), 1.0 - 0.2, 1e-12);  // b(3) = 1, delta = 0.2
  ASSERT_EQ((*j)["terms"].size(), 3u);
  EXPECT_EQ((*j)["terms"][0]["name"], "format");
  EXPECT_EQ((*j)["terms"][0]["weight"], 1.0);
  // Unsolvable at every level: the configured value (0).
  req.level_correct = {false, false, false, false};
  EXPECT_EQ((*ExplainReward(rewards::RewardConfig{}, req))["lmin"], nullptr);
}

TEST(CogerRewardReportTest, MissingOracleAndBadInputsAreErrors) {
  RewardReportRequest req;
  req.pred = "<question_level>L2</question_level>";
  req.gold = "1";
  auto none = ExplainReward(rewards::RewardConfig{}, req);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("--lmin"), std::string::npos);
  EXPECT_FALSE(ParseLevelCorrect("0,2").ok());
  EXPECT_FALSE(ParseLevelCorrect("").ok());
  req.level_correct = {true, true};
  EXPECT_FALSE(ExplainReward(rewards::RewardConfig{}, req).ok()) << "two entries for four levels";
  // Without a hierarchy term no oracle is needed; a bad tag scores 0 and says why.
  rewards::RewardConfig config;
  config.terms = {{"format", 1.0}, {"accuracy", 2.0}};
  req.level_correct.clear();
  req.pred = "L2";
  auto j = ExplainReward(config, req);
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ(Term(*j, "format"), 0.0);
  EXPECT_TRUE((*j)["level_tag"].contains("error"));
}

// `allot reward --recipe deeptool`: the action term scores --pred against --gold, the expert's
// step. --gold never reached RewardInput::reference_step, so every input failed ("reference
// step: expected <think>").
TEST(CogerRewardReportTest, DeepToolActionTermReadsTheExpertStepFromGold) {
  rewards::RewardConfig config;
  config.terms = {{"action", 1.0}};  // configs/deeptool.yaml
  RewardReportRequest req;
  req.pred = "<think>add them</think>\n<code>print(1 + 2)</code>";
  req.gold = "<think>sum</think><code>print(1+2)</code>";
  auto j = ExplainReward(config, req);
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  // difflib.SequenceMatcher(None, "print(1 + 2)", "print(1+2)").ratio()
  EXPECT_NEAR(Term(*j, "action"), 0.9090909090909091, 1e-12);
  EXPECT_NEAR((*j)["action"]["gestalt"].get<double>(), 0.9090909090909091, 1e-12);
  EXPECT_TRUE((*j)["action"]["gate"].get<bool>());
  EXPECT_FALSE(j->contains("level_tag")) << "no CogER term, no level tag";
  EXPECT_FALSE(j->contains("lmin"));
  // A final answer where the expert called a tool: the gate closes the reward (Eq. 7), and the
  // report still shows the similarity it gated.
  req.pred = "<think>done</think><answer>print(1+2)</answer>";
  j = ExplainReward(config, req);
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ(Term(*j, "action"), 0.0);
  EXPECT_EQ((*j)["action"]["gestalt"].get<double>(), 1.0);
  EXPECT_FALSE((*j)["action"]["gate"].get<bool>());
  // A malformed policy step scores 0 and says why.
  req.pred = "print(1+2)";
  j = ExplainReward(config, req);
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ(Term(*j, "action"), 0.0);
  EXPECT_TRUE((*j)["action"]["gestalt"].is_null());
  EXPECT_NE((*j)["action"]["error"].get<std::string>().find("--pred"), std::string::npos);
}

}  // namespace
}  // namespace allot::envs::coger
