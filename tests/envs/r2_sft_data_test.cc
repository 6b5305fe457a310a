// The SFT data tools of R2-Reasoner (App. B): d* of Eq. 4 as a decomposer example, and the
// grouped search with Acc(M_A) evaluated by executing allocations on scripted pool endpoints.
#include <gtest/gtest.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "envs/r2/sft_data.h"
#include "llm/client.h"
#include "tests/envs/runtime_test_util.h"

namespace allot::envs::r2 {
namespace {

using llm::testing::Reply;
using llm::testing::ScriptedServer;
using llm::testing::ServerRequest;

class R2SftDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The small model always answers 1, the big one 42: only the big one solves the task.
    server_.SetHandler([](const ServerRequest& r) {
      nlohmann::json j = nlohmann::json::parse(r.body);
      if (r.path == "/v1/completions") {
        const bool big = j["model"] == "big-model";
        return Reply::Json(testing::Sampled(big ? "\\boxed{42}" : "\\boxed{1}", {7}));
      }
      return Reply::Json(R"({"error":"not scripted"})", 404);
    });
    R2EnvConfig c;
    c.endpoints = {testing::ScriptedEndpoint(server_, "router"),
                   testing::ScriptedEndpoint(server_, "small"),
                   testing::ScriptedEndpoint(server_, "big")};
    c.endpoints[1].group = "SLM";
    c.endpoints[2].group = "LLM";
    c.r2.prompts.dir = std::string(ALLOT_SOURCE_DIR) + "/configs/prompts/r2";
    auto env = R2Env::Create(std::move(c));
    ASSERT_TRUE(env.ok()) << env.status().ToString();
    env_ = std::move(env).value();
  }

  ScriptedServer server_;
  std::unique_ptr<R2Env> env_;
};

TEST_F(R2SftDataTest, TheDecomposerExampleIsTheBestCorrectCandidate) {
  const std::string line = R"({"question": "What is 6*7?", "candidates": [
      {"subtasks": ["a", "b", "c", "d", "e"], "tokens": 676, "incoherent_pairs": 1,
       "correct": true},
      {"text": "Subtask 1: multiply", "tokens": 10, "correct": false},
      {"text": "Subtask 1: six\nSubtask 2: times seven", "tokens": 900, "correct": true}]})";
  Result<DecomposerExample> e =
      DecomposerExampleFromLine(line, *env_, DecompositionWeights{}, "d.jsonl:1");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->chosen, 2u);  // 200 + 900 = 1100 beats the golden 1426; the 110 one is wrong
  EXPECT_DOUBLE_EQ(e->score, 1100.0);
  EXPECT_EQ(e->completion, "Subtask 1: six\nSubtask 2: times seven\n");
  EXPECT_NE(e->prompt.find("What is 6*7?"), std::string::npos);
  const auto j = nlohmann::json::parse(SftLine(e->prompt, e->completion));
  EXPECT_EQ(j["completion"], e->completion);
}

TEST_F(R2SftDataTest, BadDecomposerLinesNameTheLineAndField) {
  auto bad = [&](const std::string& line) {
    return DecomposerExampleFromLine(line, *env_, {}, "d.jsonl:7").status().message();
  };
  EXPECT_NE(bad("nope").find("d.jsonl:7"), std::string::npos);
  EXPECT_NE(bad(R"({"question": "q", "candidates": [{"subtasks": ["a"]}]})").find("tokens"),
            std::string::npos);
  EXPECT_NE(bad(R"({"question": "q", "candidates": [{"subtasks": ["a", "b"], "tokens": 1,
              "incoherent_pairs": 2}]})")
                .find("incoherent_pairs"),
            std::string::npos);
}

// An easy subtask starts on the SLM group's model, fails, has no larger SLM, crosses to the LLM
// group (Eq. 10), succeeds, and cannot go lower within its group: M_A* = big.
TEST_F(R2SftDataTest, TheAllocatorExampleComesFromTheGroupedSearch) {
  const std::string line =
      R"({"question": "What is 6*7?", "answer": "42", "subtasks": ["Multiply 6 by 7."],
          "difficulty": ["easy"]})";
  Result<AllocatorExample> e =
      AllocatorExampleFromLine(line, *env_, DifficultyConfig{}, GroupedSearchConfig{}, "a.jsonl:1");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->search.iterations, 2);
  EXPECT_TRUE(e->search.correct);
  EXPECT_EQ(e->completion, "Subtask 1: difficulty 1, model big\n");
  EXPECT_NE(e->prompt.find("Subtask 1: Multiply 6 by 7."), std::string::npos);
  EXPECT_NE(e->prompt.find("- big (LLM)"), std::string::npos);
  // Each Acc evaluation: one subtask call and the integration.
  EXPECT_EQ(testing::Bodies(server_, "/v1/completions").size(), 4u);
}

TEST_F(R2SftDataTest, DifficultyFromBaselineLogProbs) {
  // p = 0.9 everywhere: easy (>= 0.8) -> the small model, which is wrong; then big.
  const double lp = std::log(0.9);
  const std::string line = R"({"question": "q", "answer": "42", "subtasks": ["s"],
      "logprobs": [[)" + std::to_string(lp) +
                           "," + std::to_string(lp) + "]]}";
  Result<AllocatorExample> e =
      AllocatorExampleFromLine(line, *env_, DifficultyConfig{}, GroupedSearchConfig{}, "a:1");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  ASSERT_EQ(e->difficulty.size(), 1u);
  EXPECT_EQ(e->difficulty[0], Difficulty::kEasy);
  EXPECT_EQ(e->search.trace[0].allocation, (std::vector<std::string>{"small"}));
  EXPECT_FALSE(AllocatorExampleFromLine(R"({"question": "q", "answer": "1", "subtasks": ["s"]})",
                                        *env_, {}, {}, "a:2")
                   .ok());
}

// With neither log-probs nor labels, the baseline endpoint answers each subtask with log-probs
// on (every scripted token at -0.5: p = 0.61, medium); the empty MLM group defers to LLM.
TEST_F(R2SftDataTest, DifficultyFromABaselineEndpoint) {
  const std::string line = R"({"question": "q", "answer": "42", "subtasks": ["s"]})";
  Result<AllocatorExample> e = AllocatorExampleFromLine(line, *env_, DifficultyConfig{},
                                                        GroupedSearchConfig{}, "a:1", "small");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->difficulty[0], Difficulty::kMedium);
  EXPECT_EQ(e->search.trace[0].allocation, (std::vector<std::string>{"big"}));
  auto bodies = testing::Bodies(server_, "/v1/completions");
  ASSERT_GE(bodies.size(), 1u);
  EXPECT_EQ(bodies[0]["model"], "small-model");
  EXPECT_EQ(bodies[0]["logprobs"], 1);
  EXPECT_EQ(bodies[0]["temperature"], 0.0);
}

// Reference results let the baseline's prompt of a later subtask show the earlier ones (the
// prompt's {{subtask_filled}}); a count that does not match the subtasks is an error.
TEST_F(R2SftDataTest, TheBaselineSeesTheReferenceResults) {
  R2EnvConfig c = env_->config();
  c.r2.prompts.subtask = "What is {{subtask_filled}}?";
  auto env = R2Env::Create(c);
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  const std::string line =
      R"({"question": "q", "answer": "42", "subtasks": ["3 + 4", "#1 * 6"], "results": ["7", "42"]})";
  Result<AllocatorExample> e = AllocatorExampleFromLine(line, **env, DifficultyConfig{},
                                                        GroupedSearchConfig{}, "a:1", "small");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  auto bodies = testing::Bodies(server_, "/v1/completions");
  ASSERT_GE(bodies.size(), 2u);
  EXPECT_EQ(bodies[0]["prompt"], "What is 3 + 4?");
  EXPECT_EQ(bodies[1]["prompt"], "What is 7 * 6?");
  const std::string bad =
      R"({"question": "q", "answer": "42", "subtasks": ["3 + 4", "#1 * 6"], "results": ["7"]})";
  Result<AllocatorExample> b = AllocatorExampleFromLine(bad, **env, DifficultyConfig{},
                                                        GroupedSearchConfig{}, "a:2", "small");
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("a:2: 'results'"), std::string::npos);
}

}  // namespace
}  // namespace allot::envs::r2
