// `allot eval` on an R2 recipe against scripted endpoints: the allocator's episode and each pool
// model alone, graded, with C_API (the pool's calls) apart from the policy's own turns; and the
// tiny world's prompts, which render the layouts its tiers were trained on.
#include <gtest/gtest.h>

#include <fstream>

#include "envs/r2/r2_env.h"
#include "envs/r2/r2_eval.h"
#include "tests/envs/runtime_test_util.h"

namespace allot::envs::r2 {
namespace {

using llm::testing::Reply;
using llm::testing::ScriptedServer;
using testing::Bodies;
using testing::Sampled;

class R2EvalTest : public ::testing::Test {
 protected:
  void SetUp() override { testing::ServeFakeTokenizer(server_); }

  R2EnvConfig Config(const std::string& prompts = "configs/prompts/r2") {
    R2EnvConfig c;
    c.endpoints = {testing::ScriptedEndpoint(server_, "router"),
                   testing::ScriptedEndpoint(server_, "small"),
                   testing::ScriptedEndpoint(server_, "big")};
    c.endpoints[2].usd_per_m_input = 5.0;
    c.endpoints[2].usd_per_m_output = 15.0;
    c.r2.pool = {"small", "big"};
    c.r2.policy_endpoint = "router";
    c.r2.prompts.dir = std::string(ALLOT_SOURCE_DIR) + "/" + prompts;
    return c;
  }

  static datasets::Example Item(const std::string& q, const std::string& a) {
    datasets::Example e;
    e.question = q;
    e.answer = a;
    e.answer_format = "boxed";
    e.extra["difficulty"] = "add2";
    return e;
  }

  ScriptedServer server_;
};

TEST_F(R2EvalTest, ScoresTheAllocatorAndEachPoolModelWithTheirCosts) {
  server_.Script(
      "/v1/completions",
      {// allocator, item 1: two subtasks on small then big, right answer
       Reply::Json(Sampled("Subtask 1: a\nSubtask 2: b", {11})),
       Reply::Json(Sampled("Subtask 1: difficulty 1, model small\n"
                           "Subtask 2: difficulty 4, model big",
                           {21})),
       Reply::Json(Sampled("1", {31})), Reply::Json(Sampled("2", {41})),
       Reply::Json(Sampled("\\boxed{3}", {51})),
       // allocator, item 2: a malformed allocation executes nothing
       Reply::Json(Sampled("Subtask 1: a", {12})), Reply::Json(Sampled("no plan", {22})),
       // small alone: wrong, right
       Reply::Json(Sampled("\\boxed{4}", {61})), Reply::Json(Sampled("\\boxed{5}", {62})),
       // big alone: right, right
       Reply::Json(Sampled("\\boxed{3}", {71})), Reply::Json(Sampled("\\boxed{5}", {72}))});
  std::vector<datasets::Example> items = {Item("What is 1 + 2?", "3"), Item("What is 2 + 3?", "5")};
  items[1].id = "tw-test-add2-0007";
  auto results = RunR2Eval(Config(), items, {});
  ASSERT_TRUE(results.ok()) << results.status().ToString();
  ASSERT_EQ(results->size(), 3u);
  const R2MethodResult& alloc = (*results)[0];
  EXPECT_EQ(alloc.method, "allocator");
  EXPECT_EQ(alloc.correct, 1);
  EXPECT_EQ(alloc.malformed, 1);
  EXPECT_EQ(alloc.items[0].models, "small,big");
  EXPECT_FALSE(alloc.items[1].format_error.empty());
  // The malformed plan is there to read, in the items of the eval's JSON.
  EXPECT_EQ(alloc.items[1].allocation, "no plan");
  EXPECT_EQ(alloc.items[1].ToJson().value("decomposition", ""), "Subtask 1: a");
  EXPECT_EQ(alloc.items[1].ToJson().value("id", ""), "tw-test-add2-0007");
  EXPECT_EQ(alloc.subtasks_per_model.at("small"), 1);
  EXPECT_EQ(alloc.subtasks_per_model.at("big"), 1);
  // Every scripted reply bills 10 prompt tokens and one completion token per id.
  const double policy = 4 * (10 * 1.0e-6 + 1 * 2.0e-6);
  const double pool = (10 * 1.0e-6 + 2.0e-6) + 2 * (10 * 5.0e-6 + 15.0e-6);
  EXPECT_NEAR(alloc.policy_cost_usd, policy, 1e-12);
  EXPECT_NEAR(alloc.mean_api_cost_usd(), pool / 2, 1e-12);
  EXPECT_NEAR(alloc.mean_cost_usd(), (pool + policy) / 2, 1e-12);

  EXPECT_EQ((*results)[1].method, "small");
  EXPECT_EQ((*results)[1].correct, 1);
  EXPECT_EQ((*results)[2].method, "big");
  EXPECT_EQ((*results)[2].correct, 2);
  EXPECT_DOUBLE_EQ((*results)[2].accuracy(), 1.0);
  EXPECT_NEAR((*results)[2].mean_api_cost_usd(), 10 * 5.0e-6 + 15.0e-6, 1e-12);
  // The single-model prompt is the recipe's, with the question.
  auto bodies = Bodies(server_, "/v1/completions");
  ASSERT_EQ(bodies.size(), 11u);
  const std::string single = bodies[9]["prompt"];
  EXPECT_NE(single.find("What is 1 + 2?"), std::string::npos);
  EXPECT_EQ(bodies[9]["model"], "big-model");
}

TEST_F(R2EvalTest, DecomposedRunsEverySubtaskOnOneModel) {
  server_.Script(
      "/v1/completions",
      {Reply::Json(Sampled("Subtask 1: a\nSubtask 2: b", {11})), Reply::Json(Sampled("1", {31})),
       Reply::Json(Sampled("2", {41})), Reply::Json(Sampled("\\boxed{3}", {51}))});
  auto results = RunR2Eval(Config(), {Item("What is 1 + 2?", "3")},
                           {.methods = {"decomposed:big"}, .adapter = "cold"});
  ASSERT_TRUE(results.ok()) << results.status().ToString();
  const R2MethodResult& r = (*results)[0];
  EXPECT_EQ(r.correct, 1);
  EXPECT_EQ(r.items[0].models, "big,big");
  EXPECT_EQ(r.subtasks_per_model.at("big"), 2);
  EXPECT_NEAR(r.policy_cost_usd, 10 * 1.0e-6 + 2.0e-6, 1e-12);
  auto bodies = Bodies(server_, "/v1/completions");
  ASSERT_EQ(bodies.size(), 4u);
  EXPECT_EQ(bodies[0]["model"], "cold");  // the policy's adapter decomposes
  const std::string decomposer = bodies[0]["prompt"];
  EXPECT_NE(decomposer.find("What is 1 + 2?"), std::string::npos);
  EXPECT_EQ(bodies[1]["model"], "big-model");
  EXPECT_EQ(bodies[3]["model"], "big-model");
}

TEST_F(R2EvalTest, RejectsAMethodOutsideThePool) {
  auto results = RunR2Eval(Config(), {Item("q", "1")}, {.methods = {"huge"}});
  ASSERT_FALSE(results.ok());
  EXPECT_NE(results.status().message().find("huge"), std::string::npos);
}

// The tiny world's tiers learned the "step" layout of tinyworld/formats.h (each operation asked
// directly), byte for byte: a subtask is one operation, with "#k" filled from result k's answer.
TEST_F(R2EvalTest, TinyWorldPromptsRenderTheTiersLayouts) {
  auto env = R2Env::Create(Config("configs/prompts/tinyworld/r2"));
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  const std::vector<std::string> subtasks = {"91 - 80", "#1 - 3"};
  auto first = (*env)->SubtaskPrompt("What is 91 - 83?", subtasks, 0, {});
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first, "What is 91 - 80?\nAnswer directly.\n");
  auto second =
      (*env)->SubtaskPrompt("What is 91 - 83?", subtasks, 1, {"The answer is \\boxed{11}"});
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(*second, "What is 11 - 3?\nAnswer directly.\n");
  auto single = (*env)->SinglePrompt("What is 91 - 83?");
  ASSERT_TRUE(single.ok());
  EXPECT_EQ(*single, "What is 91 - 83?\nThink step by step.\n");
}

// --adapter names one adapter for both roles, or one per role (the two that alternating GRPO
// trains, Sec. 4.3), which the env then sends each turn to.
TEST(R2EvalPolicyTest, TheAdapterOptionNamesOneAdapterOrOnePerRole) {
  auto none = EvalPolicy("");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, nullptr);
  auto one = EvalPolicy("r2-cold");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ((*one)->adapter_name, "r2-cold");
  EXPECT_TRUE((*one)->role_adapters.empty());
  auto two = EvalPolicy("decomposer=train-decomposer-v3,allocator=train-allocator-v5");
  ASSERT_TRUE(two.ok()) << two.status().message();
  ASSERT_NE((*two)->AdapterOf("decomposer"), nullptr);
  ASSERT_NE((*two)->AdapterOf("allocator"), nullptr);
  EXPECT_EQ((*two)->AdapterOf("decomposer")->adapter_name, "train-decomposer-v3");
  EXPECT_EQ((*two)->AdapterOf("allocator")->adapter_name, "train-allocator-v5");
  auto missing = EvalPolicy("decomposer=a");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no adapter for the allocator role"),
            std::string::npos);
  EXPECT_FALSE(EvalPolicy("decomposer=a,=b").ok());
}

}  // namespace
}  // namespace allot::envs::r2
