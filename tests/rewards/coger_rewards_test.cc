#include "rewards/coger_rewards.h"

#include <gtest/gtest.h>

namespace allot::rewards {
namespace {

RewardInput Routed(const std::string& response) {
  RewardInput in;
  in.response = response;
  return in;
}

TEST(CogerRewardsTest, ParseLevelTag) {
  Result<LevelTag> l1 = ParseLevelTag("4 <question_level>L1</question_level>");
  ASSERT_TRUE(l1.ok()) << l1.status().ToString();
  EXPECT_EQ(l1->level, 1);
  EXPECT_EQ(l1->answer, "4");
  EXPECT_EQ(ParseLevelTag("<question_level>L3</question_level>\n")->level, 3);
}

TEST(CogerRewardsTest, FormatRewardEq4) {
  FormatReward f;
  EXPECT_EQ(*f.Compute(Routed("The answer is 4. <question_level>L1</question_level>")), 1.0);
  EXPECT_EQ(*f.Compute(Routed("<question_level>L2</question_level>")), 1.0);
  EXPECT_EQ(*f.Compute(Routed("  <question_level> L4 </question_level>  ")), 1.0);
  // Missing, malformed, misplaced or duplicated tags, and L1 without an answer.
  for (const char* bad :
       {"", "L2", "<question_level>L1</question_level>", "<question_level>L5</question_level>",
        "<question_level>L2", "L2</question_level>", "<question_level>L2</question_level> tail",
        "</question_level>L2<question_level>", "<question_level>Level 2</question_level>",
        "<question_level>L2</question_level><question_level>L3</question_level>",
        "I think so <question_level>L3</question_level>"}) {
    EXPECT_EQ(*f.Compute(Routed(bad)), 0.0) << bad;
  }
  FormatRewardConfig lenient;
  lenient.l2_plus_tag_only = false;
  EXPECT_EQ(*FormatReward(lenient).Compute(Routed("hmm <question_level>L3</question_level>")), 1.0);
}

TEST(CogerRewardsTest, AccuracyRewardEq5) {
  AccuracyReward acc;
  RewardInput in;
  in.response = "<question_level>L2</question_level>";
  in.final_response = "so \\boxed{\\frac{1}{2}}";
  in.reference = "0.5";
  EXPECT_EQ(*acc.Compute(in), 1.0);
  in.final_response = "so \\boxed{2}";
  EXPECT_EQ(*acc.Compute(in), 0.0);
  in.final_response = "I don't know";
  EXPECT_EQ(*acc.Compute(in), 0.0);
  // L1: the router answers itself before the tag.
  in.final_response.clear();
  in.response = "1/2 <question_level>L1</question_level>";
  EXPECT_EQ(*acc.Compute(in), 1.0);
  in.response = "3 <question_level>L1</question_level>";
  EXPECT_EQ(*acc.Compute(in), 0.0);
}

TEST(CogerRewardsTest, UnsolvableValueIsConfigurable) {
  HierarchyRewardConfig c;
  c.unsolvable_value = -0.5;
  HierarchyReward h(c, {}, std::make_shared<OutcomeMinLevelOracle>());
  RewardInput in;
  in.response = "<question_level>L2</question_level>";
  in.level_correct = {false, false, false, false};
  EXPECT_EQ(*h.Compute(in), -0.5);
}

// CogER Sec. 4.3's worked example: a query solvable at every level gets 0, -0.2, -0.4, -0.6
// for L1..L4.
TEST(CogerRewardsTest, HierarchyPaperExample) {
  auto oracle = std::make_shared<OutcomeMinLevelOracle>();
  HierarchyReward h({}, {}, oracle);
  RewardInput in;
  in.level_correct = {true, true, true, true};
  in.response = "4 <question_level>L1</question_level>";
  EXPECT_NEAR(*h.Compute(in), 0.0, 1e-12);
  const double expected[] = {-0.2, -0.4, -0.6};
  for (int level = 2; level <= 4; ++level) {
    in.response = "<question_level>L" + std::to_string(level) + "</question_level>";
    EXPECT_NEAR(*h.Compute(in), expected[level - 2], 1e-12) << "L" << level;
  }
}

TEST(CogerRewardsTest, HierarchyBaseCreditAndNoPenaltyBelowLmin) {
  HierarchyReward h({}, {}, std::make_shared<OutcomeMinLevelOracle>());
  // Eq. 7: b(L_min) = 0.5 (L_min - 1); Eq. 8 penalises only levels above L_min.
  EXPECT_NEAR(h.Value(3, 3), 1.0, 1e-12);
  EXPECT_NEAR(h.Value(4, 3), 0.8, 1e-12);
  EXPECT_NEAR(h.Value(1, 3), 1.0, 1e-12);
  EXPECT_NEAR(h.Value(4, 4), 1.5, 1e-12);
  RewardInput in;
  in.level_correct = {false, false, true, true};
  in.response = "<question_level>L4</question_level>";
  EXPECT_NEAR(*h.Compute(in), 0.8, 1e-12);
  in.level_correct = {false, false, false, false};  // unsolvable: 0 (notes.md)
  EXPECT_EQ(*h.Compute(in), 0.0);
  in.level_correct = {true};
  in.response = "no tag";
  EXPECT_EQ(*h.Compute(in), 0.0);
}

TEST(CogerRewardsTest, DatasetOracle) {
  HierarchyReward h({}, {}, std::make_shared<DatasetMinLevelOracle>());
  RewardInput in;
  in.response = "<question_level>L3</question_level>";
  in.min_level = 2;
  EXPECT_NEAR(*h.Compute(in), 0.5 - 0.2, 1e-12);
  in.min_level = 7;
  EXPECT_EQ(h.Compute(in).status().code(), StatusCode::kInvalidArgument);
}

TEST(CogerRewardsTest, SolvingOracleCachesPerQuestion) {
  auto oracle = std::make_shared<SolvingMinLevelOracle>(
      [](const RewardInput& in, int level) -> Result<bool> {
        return level >= static_cast<int>(in.question.size());
      },
      4);
  RewardInput in;
  in.question = "abc";  // solvable from L3
  EXPECT_EQ(**oracle->MinLevel(in), 3);
  EXPECT_EQ(**oracle->MinLevel(in), 3);
  EXPECT_EQ(oracle->solve_calls(), 3u);
  in.question = "abcdefg";  // never solvable
  EXPECT_FALSE(oracle->MinLevel(in)->has_value());
  EXPECT_EQ(oracle->solve_calls(), 7u);

  SolvingMinLevelOracle failing(
      [](const RewardInput&, int) -> Result<bool> { return Unavailable("endpoint down"); }, 4);
  EXPECT_EQ(failing.MinLevel(in).status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace allot::rewards
