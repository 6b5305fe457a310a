// The RLoT env's parsers: the 7-aspect self-evaluation, the block output formats, the prompt
// templates, the logic-block table, and the rule-based step verifier.
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "envs/rlot/logic_block.h"
#include "envs/rlot/rlot_prompts.h"
#include "envs/rlot/rule_step_verifier.h"
#include "envs/rlot/self_evaluation.h"

namespace allot::envs::rlot {
namespace {

TEST(RlotSelfEvaluationTest, ParsesEveryKeyInStateOrder) {
  const std::string text =
      "C2 score=[1] reason=[x]\nA1 score=3 reason=fine\nA2: 2\nA3 score=[0]\nB1 score 1\n"
      "B2 score=3\nC1 = 2";
  ParsedEvaluation e = ParseSelfEvaluation(text);
  EXPECT_EQ(e.found, 7);
  EXPECT_EQ(e.state, (State{3, 2, 0, 1, 3, 2, 1}));
}

TEST(RlotSelfEvaluationTest, MissingOrMalformedKeysAreZero) {
  // A2 has no digit before other text, B1 scores 7 (out of 0..3), the C keys are absent.
  ParsedEvaluation e = ParseSelfEvaluation("A1 score=[3]\nA2 score=high.\nA3: 2\nB1 score=7\nB2=1");
  EXPECT_EQ(e.state, (State{3, 0, 2, 0, 1, 0, 0}));
  EXPECT_EQ(e.found, 3);
  EXPECT_EQ(ParseSelfEvaluation("").found, 0);
  EXPECT_EQ(ParseSelfEvaluation("nothing to see").state, State{});
}

TEST(RlotSelfEvaluationTest, FirstScoredOccurrenceOfAKeyWins) {
  // The first "A1" carries no score (a '.' stops the filler); the second does.
  ParsedEvaluation e = ParseSelfEvaluation("A1. then A1 score=[2] and A1 score=[3]");
  EXPECT_EQ(e.state[0], 2.0f);
}

TEST(RlotSelfEvaluationTest, ReadsOnlyTheFirstCharacters) {
  std::string text(20000, 'x');
  text += "A1 score=3";
  EXPECT_EQ(ParseSelfEvaluation(text).found, 0);
}

TEST(RlotPromptsTest, NumberedItemsInOrderAndCapped) {
  auto items = ParseNumberedItems(
      "intro\n### Subtask1: add 2 and 3\n### Subtask2: double it\n### Subtask3: stop", "Subtask",
      2);
  EXPECT_EQ(items, (std::vector<std::string>{"add 2 and 3", "double it"}));
  EXPECT_TRUE(ParseNumberedItems("1. add\n2. double", "Subtask", 4).empty());
  EXPECT_EQ(ParseNumberedItems("### Plan[2]: b\n### Plan1: a", "Plan", 3),
            (std::vector<std::string>{"b", "a"}));
}

TEST(RlotPromptsTest, ChosenPlanFallsBackToPlanOne) {
  EXPECT_EQ(ParseChosenPlan("The most promising plan is Plan[3]: short", 3), 3);
  EXPECT_EQ(ParseChosenPlan("the most promising plan is plan 2 because", 3), 2);
  EXPECT_EQ(ParseChosenPlan("The most promising plan is Plan[7]: ?", 3), 1);
  EXPECT_EQ(ParseChosenPlan("I like the second one", 3), 1);
}

TEST(RlotPromptsTest, FinishCheckReadsTheFirstYesOrNo) {
  EXPECT_TRUE(ParseYes("Yes."));
  EXPECT_TRUE(ParseYes(" yes, the answer is 5"));
  EXPECT_FALSE(ParseYes("No, not yet. yes later"));
  EXPECT_FALSE(ParseYes("Nothing yet"));  // "nothing" is not "no", and no yes follows
  EXPECT_FALSE(ParseYes("eyes"));
}

// A copy of the shipped RLoT templates with `reason.txt` replaced.
std::string TemplatesWithReason(const std::string& reason) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("rlot_prompts_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::copy(std::string(ALLOT_SOURCE_DIR) + "/configs/prompts/rlot", dir);
  std::ofstream(dir / "reason.txt", std::ios::binary | std::ios::trunc) << reason;
  return dir.string();
}

TEST(RlotPromptsTest, AnUnknownPlaceholderNamesTheTemplateAndTheName) {
  const std::string dir = TemplatesWithReason("{{question}}\n{{steps}}\n{{hint}}\nNext step:");
  auto p = RlotPrompts::Load(dir);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find(dir + "/reason.txt"), std::string::npos);
  EXPECT_NE(p.status().message().find("{{hint}}"), std::string::npos) << p.status().ToString();
  std::filesystem::remove_all(dir);
}

TEST(RlotPromptsTest, ASingleBraceTemplateIsRefused) {
  // The former {name} syntax would now reach the model as written: refused at load.
  const std::string dir = TemplatesWithReason("{question}\n{steps}\nNext step:");
  auto p = RlotPrompts::Load(dir);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("reason.txt: the template never uses {{question}}"),
            std::string::npos)
      << p.status().ToString();
  std::filesystem::remove_all(dir);
}

TEST(RlotPromptsTest, ShippedTemplatesLoad) {
  auto p = RlotPrompts::Load(std::string(ALLOT_SOURCE_DIR) + "/configs/prompts/rlot");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_NE(p->self_evaluate.find("A1 score=[SCORE]"), std::string::npos);
  EXPECT_NE(p->decompose_list.find("### Subtask1:"), std::string::npos);
  EXPECT_NE(p->debate_compare.find("The most promising plan is Plan[INDEX]"), std::string::npos);
  auto missing = RlotPrompts::Load("no/such/dir");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("no/such/dir/reason.txt"), std::string::npos);
}

TEST(LogicBlockTest, OneTableForEveryName) {
  EXPECT_STREQ(LogicBlockName(0), "reason");
  EXPECT_STREQ(LogicBlockName(4), "terminate");
  EXPECT_STREQ(LogicBlockName(5), "other");
  EXPECT_STREQ(LogicBlockTitle(1), "Decompose");
  EXPECT_EQ(ActionNames(5),
            (std::vector<std::string>{"reason", "decompose", "debate", "refine", "terminate"}));
  EXPECT_EQ(ActionNames(2), (std::vector<std::string>{"action_0", "action_1"}));
  EXPECT_EQ(BlockPattern({1, 0, 3, 4}), "Decompose-Reason-Refine");
}

TEST(RuleStepVerifierTest, ChecksEveryEquationExactly) {
  EXPECT_EQ(CheckStepArithmetic("2 + 3 = 5, and 5 * 4 = 20.").checked, 2);
  EXPECT_EQ(CheckStepArithmetic("2 + 3 = 5, and 5 * 4 = 20.").wrong, 0);
  StepCheck bad = CheckStepArithmetic("So 12 - 5 = 8 apples remain.");
  EXPECT_EQ(bad.checked, 1);
  EXPECT_EQ(bad.wrong, 1);
  // Exact rationals: 0.1 + 0.2 is 0.3, 1/3 is not 0.33.
  EXPECT_EQ(CheckStepArithmetic("0.1 + 0.2 = 0.3").wrong, 0);
  EXPECT_EQ(CheckStepArithmetic("1/3 = 0.33").wrong, 1);
  // Chains check each neighbouring pair; thousands separators are read.
  StepCheck chain = CheckStepArithmetic("3 * (4 + 1) = 15 = 16");
  EXPECT_EQ(chain.checked, 2);
  EXPECT_EQ(chain.wrong, 1);
  EXPECT_EQ(CheckStepArithmetic("2,000 + 1 = 2001").wrong, 0);
  // Nothing to check: symbols, comparisons, words.
  EXPECT_EQ(CheckStepArithmetic("Let x = 3.").checked, 0);
  EXPECT_EQ(CheckStepArithmetic("a >= 2 and b <= 4 and c == 5").checked, 0);
  EXPECT_EQ(CheckStepArithmetic("No arithmetic here.").checked, 0);
}

TEST(RuleStepVerifierTest, ScoresEachStepBehindTheStepScorerInterface) {
  RuleStepVerifier v({.correct = 1.0, .wrong = 0.0, .unchecked = 0.5});
  const rewards::StepScorer& scorer = v;
  auto s = scorer.StepScores("Q", {"2 + 2 = 4", "think about it", "4 * 3 = 13"});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, (std::vector<double>{1.0, 0.5, 0.0}));
  EXPECT_FALSE(scorer.StepScores("Q", {}).ok());
}

// A rollout worker verifies the steps of several episodes at once, and GiNaC's reference counts
// are not atomic: without the process-wide GiNaC lock this crashes or miscounts.
TEST(RuleStepVerifierTest, VerifiesFromManyThreadsAtOnce) {
  constexpr int kThreads = 4;
  constexpr int kCalls = 400;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &wrong] {
      for (int i = 0; i < kCalls; ++i) {
        const int a = (i * 7 + t) % 90 + 2;
        const std::string ok = std::to_string(a) + " * 3 + 1/2 = " + std::to_string(a * 3) + ".5";
        const std::string bad = std::to_string(a) + " - 1 = " + std::to_string(a);
        StepCheck c = CheckStepArithmetic(ok + " and " + bad);
        if (c.checked != 2 || c.wrong != 1) ++wrong;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace allot::envs::rlot
