// The R2-Reasoner data tools' arithmetic (App. B): the decomposition score (Eq. 2-3) with the
// paper's weights and best-of-m selection (Eq. 4), the alpha-quantile difficulty (Eq. 7), and
// the grouped allocation search (Eq. 8-10) against a synthetic Acc oracle.
#include <gtest/gtest.h>

#include <cmath>

#include "datasets/jsonl_loader.h"
#include "envs/r2/decomposition_score.h"
#include "envs/r2/grouped_search.h"
#include "envs/r2/subtask_difficulty.h"

namespace allot::envs::r2 {
namespace {

DecompositionCandidate Candidate(size_t k, int64_t tokens, int64_t incoherent, bool correct) {
  return {std::vector<std::string>(k, "t"), tokens, incoherent, correct};
}

// A golden case with the paper's weights: 100 * 5 + 1 * 676 + 1000 * 1 / (5 - 1) = 1426.
TEST(DecompositionScoreTest, PaperWeightsScoreTheGoldenCase) {
  EXPECT_DOUBLE_EQ(DecompositionScore(Candidate(5, 676, 1, true), DecompositionWeights{}), 1426.0);
  EXPECT_DOUBLE_EQ(CoherencePairRatio(1, 5), 0.25);
  EXPECT_DOUBLE_EQ(CoherencePairRatio(0, 1), 0.0);  // one subtask has no adjacent pair
  EXPECT_DOUBLE_EQ(DecompositionScore(Candidate(1, 50, 0, true), DecompositionWeights{}), 150.0);
}

TEST(DecompositionScoreTest, BestOfMPrefersCorrectCandidates) {
  const DecompositionWeights w;
  // The cheapest candidate is wrong: d* is the best correct one (Eq. 4, first case).
  std::vector<DecompositionCandidate> c = {Candidate(3, 900, 0, true), Candidate(2, 100, 0, false),
                                           Candidate(4, 300, 1, true)};
  // Scores: 1200, 300, 400 + 300 + 333.3 = 1033.3.
  EXPECT_EQ(SelectDecomposition(c, w), 2u);
  // No correct candidate: the lowest score overall (second case).
  for (auto& x : c) x.correct = false;
  EXPECT_EQ(SelectDecomposition(c, w), 1u);
  EXPECT_EQ(SelectDecomposition({}, w), std::nullopt);
}

TEST(SubtaskDifficultyTest, AlphaQuantileOfTokenProbabilities) {
  // Probabilities 0.5 0.6 0.7 0.9 0.99 (sorted); alpha 0.3 sits at 1.2 -> 0.6 + 0.2 * 0.1.
  std::vector<float> lp;
  for (double p : {0.9, 0.5, 0.99, 0.7, 0.6}) lp.push_back(static_cast<float>(std::log(p)));
  Result<double> q = AlphaQuantileProbability(lp, 0.3);
  ASSERT_TRUE(q.ok());
  EXPECT_NEAR(*q, 0.62, 1e-6);
  EXPECT_EQ(ClassifyDifficulty(*q, DifficultyConfig{}), Difficulty::kMedium);
  EXPECT_NEAR(*AlphaQuantileProbability(lp, 0.0), 0.5, 1e-6);
  EXPECT_NEAR(*AlphaQuantileProbability(lp, 1.0), 0.99, 1e-6);
  EXPECT_FALSE(AlphaQuantileProbability({}, 0.3).ok());
  EXPECT_FALSE(AlphaQuantileProbability({0.5f}, 0.3).ok());
  EXPECT_FALSE(AlphaQuantileProbability({NAN}, 0.3).ok());
}

TEST(SubtaskDifficultyTest, ThresholdsOfEq7) {
  const DifficultyConfig c;
  EXPECT_EQ(c.alpha, 0.3);
  EXPECT_EQ(ClassifyDifficulty(0.8, c), Difficulty::kEasy);
  EXPECT_EQ(ClassifyDifficulty(0.79, c), Difficulty::kMedium);
  EXPECT_EQ(ClassifyDifficulty(0.53, c), Difficulty::kMedium);
  EXPECT_EQ(ClassifyDifficulty(0.52, c), Difficulty::kHard);
  EXPECT_STREQ(GroupOf(Difficulty::kEasy), "SLM");
  EXPECT_STREQ(GroupOf(Difficulty::kHard), "LLM");
  EXPECT_EQ(DifficultyLabel(Difficulty::kMedium, c), 3);
  DifficultyConfig bad;
  bad.tau_hard = 0.9;
  EXPECT_FALSE(bad.Validate().ok());
}

class GroupedSearchTest : public ::testing::Test {
 protected:
  // Nine models, three per group, smallest first (the paper's pool shape).
  std::vector<PoolModel> pool_ = {{"s1", "SLM"}, {"s2", "SLM"}, {"s3", "SLM"},
                                  {"m1", "MLM"}, {"m2", "MLM"}, {"m3", "MLM"},
                                  {"l1", "LLM"}, {"l2", "LLM"}, {"l3", "LLM"}};

  int Rank(const std::string& m) {
    for (size_t i = 0; i < pool_.size(); ++i) {
      if (pool_[i].name == m) return static_cast<int>(i);
    }
    return -1;
  }
  // Acc = 1 iff every subtask's model ranks at least what it needs.
  AccuracyFn Needs(std::vector<int> need) {
    return [this, need](const std::vector<std::string>& a) -> Result<bool> {
      for (size_t i = 0; i < a.size(); ++i) {
        if (Rank(a[i]) < need[i]) return false;
      }
      return true;
    };
  }
};

TEST_F(GroupedSearchTest, StartsOnEachGroupsMediumModelAndDowngradesWhileCorrect) {
  Result<SearchResult> r = GroupedSearch({Difficulty::kEasy, Difficulty::kHard}, pool_,
                                         Needs({0, 7}), GroupedSearchConfig{});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->trace.size(), 3u);
  EXPECT_EQ(r->trace[0].allocation, (std::vector<std::string>{"s2", "l2"}));  // M_A,0
  EXPECT_TRUE(r->trace[0].correct);
  EXPECT_EQ(r->trace[1].allocation, (std::vector<std::string>{"s2", "l1"}));  // largest first
  EXPECT_FALSE(r->trace[1].correct);
  EXPECT_EQ(r->trace[2].allocation, (std::vector<std::string>{"s1", "l2"}));  // l2 kept
  EXPECT_TRUE(r->correct);
  EXPECT_EQ(r->allocation, (std::vector<std::string>{"s1", "l2"}));
  EXPECT_EQ(r->iterations, 3);
}

TEST_F(GroupedSearchTest, EscalatesWithinTheGroupThenAcrossGroups) {
  Result<SearchResult> r =
      GroupedSearch({Difficulty::kEasy}, pool_, Needs({4}), GroupedSearchConfig{});
  ASSERT_TRUE(r.ok());
  std::vector<std::string> tried;
  for (const auto& s : r->trace) tried.push_back(s.allocation[0]);
  EXPECT_EQ(tried, (std::vector<std::string>{"s2", "s3", "m1", "m2", "m1"}));
  EXPECT_EQ(r->allocation, (std::vector<std::string>{"m2"}));
  EXPECT_TRUE(r->correct);
}

TEST_F(GroupedSearchTest, StopsAtTheIterationBudget) {
  GroupedSearchConfig c;
  EXPECT_EQ(c.max_iterations, 20);
  Result<SearchResult> r = GroupedSearch({Difficulty::kEasy}, pool_, Needs({99}), c);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->correct);
  EXPECT_EQ(r->iterations, 8);  // s2 s3 m1 m2 m3 l1 l2 l3: nothing larger to try
  EXPECT_EQ(r->allocation, (std::vector<std::string>{"l3"}));
  c.max_iterations = 3;
  r = GroupedSearch({Difficulty::kEasy, Difficulty::kEasy}, pool_, Needs({99, 99}), c);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->iterations, 3);
}

TEST_F(GroupedSearchTest, AnEmptyGroupDefersToTheNearestAndErrorsPropagate) {
  std::vector<PoolModel> pool = {{"s1", "SLM"}, {"l1", "LLM"}, {"l2", "LLM"}};
  Result<SearchResult> r = GroupedSearch({Difficulty::kMedium}, pool,
                                         [](const auto&) -> Result<bool> { return true; }, {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->trace[0].allocation, (std::vector<std::string>{"l1"}));
  r = GroupedSearch({Difficulty::kEasy}, pool,
                    [](const auto&) -> Result<bool> { return Unavailable("endpoint down"); }, {});
  EXPECT_NE(r.status().message().find("endpoint down"), std::string::npos);
  EXPECT_FALSE(GroupedSearch({Difficulty::kEasy}, {{"x", "XL"}},
                             [](const auto&) -> Result<bool> { return true; }, {})
                   .ok());
}

// The benchmarks of R2-Reasoner Sec. 5.1 that had no preset, on lines shaped like their
// public releases.
TEST(R2DatasetPresetsTest, P3ScanChampAndMusiqueMapTheirFields) {
  auto parse = [](const char* preset, const char* line) {
    Result<datasets::FieldMapping> m = datasets::PresetMapping(preset);
    EXPECT_TRUE(m.ok()) << preset;
    Result<datasets::Example> e = datasets::ParseExample(line, *m, "t.jsonl:1", 0);
    EXPECT_TRUE(e.ok()) << preset << ": " << e.status().ToString();
    return e.ok() ? *e : datasets::Example{};
  };
  datasets::Example scan =
      parse("scan", R"({"commands": "jump twice", "actions": "I_JUMP I_JUMP"})");
  EXPECT_EQ(scan.question, "jump twice");
  EXPECT_EQ(scan.answer, "I_JUMP I_JUMP");
  datasets::Example champ =
      parse("champ",
            R"({"problem_identifier": "P_1", "problem_text": "Find x.", "problem_answer": "3"})");
  EXPECT_EQ(champ.id, "P_1");
  EXPECT_EQ(champ.question, "Find x.");
  EXPECT_EQ(champ.answer, "3");
  datasets::Example mu = parse("musique", R"({"id": "2hop_1", "question": "Who?", "answer": "Ada",
      "answer_aliases": ["A. L."], "paragraphs": []})");
  EXPECT_EQ(mu.answer, "Ada");
  EXPECT_TRUE(mu.extra.contains("answer_aliases"));
  datasets::Example p3 = parse("p3", R"({"name": "Study_1", "question": "def sat(s): ...",
      "answer": "'ab'"})");
  EXPECT_EQ(p3.id, "Study_1");
  EXPECT_EQ(p3.answer_format, "text");
}

}  // namespace
}  // namespace allot::envs::r2
