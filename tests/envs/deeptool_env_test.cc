// The DeepTool env against a scripted endpoint and a scripted code tool: the exact sequence of
// calls, segments and masks, the per-step action-centric rewards (DeepTool Eq. 6-8) in
// Trajectory::step_rewards and the outcome reward, the limits and every failure path.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "envs/deeptool/deeptool_env.h"
#include "envs/deeptool/deeptool_eval.h"
#include "llm/client.h"
#include "rewards/gestalt.h"
#include "tests/envs/env_sections.h"
#include "tests/envs/runtime_test_util.h"
#include "tools/tool.h"

namespace allot::envs::deeptool {
namespace {

using llm::testing::Reply;
using llm::testing::ScriptedServer;
using nlohmann::json;
using runtime::FailureReason;
using runtime::SegmentRole;
using testing::Bodies;
using testing::FakeTokenize;
using testing::Sampled;

const std::string kStep1 = "<think>\nadd them\n</think>\n<code>\nprint(1+1)\n</code>";
const std::string kStep2 = "<think>\nit printed 2\n</think>\n<answer>\n\\boxed{2}\n</answer>";

// A whole expert trajectory as the item: every step is a reference.
std::string WholeItem() {
  return json{{"question", "What is 1+1?"},
              {"answer", "2"},
              {"steps",
               {{{"think", "add"}, {"code", "print(1+1)"}, {"observation", "2"}},
                {{"think", "done"}, {"answer", "\\boxed{2}"}}}}}
      .dump();
}

// A scripted execute_python: records the code, answers with the next scripted result.
class FakeCodeTool : public tools::Tool {
 public:
  FakeCodeTool() {
    spec_.name = "execute_python";
    spec_.family = "code";
    spec_.description = "scripted";
    spec_.input_schema = {{"type", "object"},
                          {"properties", {{"code", {{"type", "string"}}}}},
                          {"required", {"code"}}};
  }
  const tools::ToolSpec& spec() const override { return spec_; }
  Result<json> Run(const json&) override { return json(); }
  tools::ToolResult Invoke(const json& params) override {
    codes.push_back(params["code"].get<std::string>());
    if (results.empty()) return tools::ToolResult::Success({{"stdout", "2\n"}, {"stderr", ""}});
    tools::ToolResult r = results.front();
    results.erase(results.begin());
    return r;
  }
  std::vector<std::string> codes;
  std::vector<tools::ToolResult> results;

 private:
  tools::ToolSpec spec_;
};

class DeepToolEnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::ServeFakeTokenizer(server_);
    auto tool = std::make_unique<FakeCodeTool>();
    tool_ = tool.get();
    registry_ = std::make_shared<tools::ToolRegistry>();
    ASSERT_TRUE(registry_->Register(std::move(tool)).ok());
  }

  DeepToolEnvConfig Config(const std::string& mode = "interleaved") {
    DeepToolEnvConfig c;
    c.endpoints = {testing::ScriptedEndpoint(server_, "policy")};
    c.deeptool.prompts.dir = std::string(ALLOT_SOURCE_DIR) + "/configs/prompts/deeptool";
    c.deeptool.mode = mode;
    return c;
  }

  std::unique_ptr<DeepToolEnv> Make(DeepToolEnvConfig c) {
    auto env = DeepToolEnv::Create(std::move(c), nullptr, registry_);
    EXPECT_TRUE(env.ok()) << env.status().ToString();
    return env.ok() ? std::move(env).value() : nullptr;
  }

  runtime::Trajectory Run(DeepToolEnv& env, const std::string& item) {
    runtime::EpisodeInput in;
    in.dataset_item = item;
    in.sampling.temperature = 1.0;
    auto t = env.Run(in);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return t.ok() ? std::move(t).value() : runtime::Trajectory{};
  }

  double RewardOf(const runtime::Trajectory& t, const std::string& name) {
    for (const auto& [n, v] : t.rewards) {
      if (n == name) return v;
    }
    ADD_FAILURE() << "no reward " << name;
    return -99;
  }

  ScriptedServer server_;
  FakeCodeTool* tool_ = nullptr;
  std::shared_ptr<tools::ToolRegistry> registry_;
};

TEST_F(DeepToolEnvTest, InterleavedEpisodeRunsCodeSplicesTheObservationAndScoresEachStep) {
  server_.Script("/v1/completions", {Reply::Json(Sampled(kStep1, {11, 12})),
                                     Reply::Json(Sampled(kStep2, {21, 22, 23}))});
  auto env = Make(Config());
  ASSERT_NE(env, nullptr);
  runtime::Trajectory t = Run(*env, WholeItem());
  EXPECT_FALSE(t.failure.failed()) << t.failure.message;

  auto bodies = Bodies(server_, "/v1/completions");
  ASSERT_EQ(bodies.size(), 2u);
  EXPECT_EQ(bodies[0]["logprobs"], 1);
  EXPECT_EQ(bodies[0]["temperature"], 1.0);
  EXPECT_EQ(bodies[0]["max_tokens"], 6000);  // App. A.1: completion 6,000
  const std::string stop = bodies[0]["stop"].dump();
  EXPECT_NE(stop.find("</code>"), std::string::npos);
  EXPECT_NE(stop.find("</answer>"), std::string::npos);
  EXPECT_EQ(tool_->codes, (std::vector<std::string>{"print(1+1)"}));

  // prompt | step 1 (policy) | observation (tool, masked) | step 2 (policy).
  ASSERT_EQ(t.segments.size(), 4u);
  EXPECT_EQ(t.segments[0].role, SegmentRole::kPrompt);
  EXPECT_FALSE(t.segments[0].trainable);
  EXPECT_EQ(t.segments[0].ids, bodies[0]["prompt"].get<std::vector<int64_t>>());
  EXPECT_EQ(t.segments[1].role, SegmentRole::kPolicy);
  EXPECT_TRUE(t.segments[1].trainable);
  EXPECT_EQ(t.segments[1].ids, (std::vector<int64_t>{11, 12}));
  EXPECT_EQ(t.segments[1].step, 1u);
  EXPECT_EQ(t.segments[1].logprobs.size(), 2u);
  EXPECT_EQ(t.segments[2].role, SegmentRole::kTool);
  EXPECT_FALSE(t.segments[2].trainable);
  EXPECT_EQ(t.segments[2].step, 1u);
  EXPECT_EQ(t.segments[2].ids, FakeTokenize("\n<observation>\n2\n</observation>\n"));
  EXPECT_EQ(t.segments[3].role, SegmentRole::kPolicy);
  EXPECT_EQ(t.segments[3].step, 2u);
  // The second call's prompt is every id so far, never re-tokenized.
  std::vector<int64_t> so_far;
  for (int i = 0; i < 3; ++i) {
    so_far.insert(so_far.end(), t.segments[i].ids.begin(), t.segments[i].ids.end());
  }
  EXPECT_EQ(bodies[1]["prompt"].get<std::vector<int64_t>>(), so_far);

  // Eq. 6-8: both actions equal the expert's (the thoughts differ and do not count).
  EXPECT_EQ(t.step_rewards, (std::vector<double>{1.0, 1.0}));
  EXPECT_EQ(RewardOf(t, "action"), 1.0);
  EXPECT_EQ(RewardOf(t, "accuracy"), 1.0);
  EXPECT_EQ(t.reward, 1.0);
  EXPECT_EQ(t.tool_calls, 1u);
  EXPECT_EQ(t.info.at("answer"), "\\boxed{2}");
  EXPECT_EQ(t.usage.by_endpoint.at("policy").calls, 2);
}

TEST_F(DeepToolEnvTest, AStopStringTheServerLeftOutJoinsTheContextAsEnvTokens) {
  server_.Script("/v1/completions",
                 {Reply::Json(Sampled("<think>\nadd\n</think>\n<code>\nprint(1+1)\n", {11}, "stop",
                                      "</code>")),
                  Reply::Json(Sampled("<think>\nok\n</think>\n<answer>\n\\boxed{3}\n", {21}, "stop",
                                      "</answer>"))});
  auto env = Make(Config());
  ASSERT_NE(env, nullptr);
  runtime::Trajectory t = Run(*env, WholeItem());
  EXPECT_FALSE(t.failure.failed()) << t.failure.message;
  ASSERT_EQ(t.segments.size(), 6u);
  EXPECT_EQ(t.segments[2].role, SegmentRole::kEnv);
  EXPECT_EQ(t.segments[2].ids, FakeTokenize("</code>"));
  EXPECT_EQ(t.segments[3].role, SegmentRole::kTool);
  EXPECT_EQ(t.segments[5].role, SegmentRole::kEnv);
  EXPECT_EQ(t.segments[5].ids, FakeTokenize("</answer>"));
  // "\boxed{3}" against "\boxed{2}": 8 of 9 characters match, 2*8/18.
  ASSERT_EQ(t.step_rewards.size(), 2u);
  EXPECT_EQ(t.step_rewards[0], 1.0);
  EXPECT_NEAR(t.step_rewards[1], 16.0 / 18.0, 1e-12);
  EXPECT_EQ(RewardOf(t, "accuracy"), 0.0);
  EXPECT_EQ(t.reward, 0.0);
}

TEST_F(DeepToolEnvTest, StepwiseInstanceSeesTheGroundTruthHistoryAndIsScoredNotRun) {
  const json history = {{{"think", "add"}, {"code", "print(1+1)"}, {"observation", "2"}}};
  const json ref = {{{"think", "t"}, {"code", "x = 2\nprint(x * 10)"}}};
  const std::string item = json{{"question", "q"},
                                {"answer", "20"},
                                {"extra", {{"history", history}, {"reference_steps", ref}}}}
                               .dump();
  const std::string out = "<think>\nscale\n</think>\n<code>\nx = 2\nprint(x * 100)\n</code>";
  server_.Script("/v1/completions", {Reply::Json(Sampled(out, {31, 32}))});
  auto env = Make(Config("stepwise"));
  ASSERT_NE(env, nullptr);
  runtime::Trajectory t = Run(*env, item);
  EXPECT_FALSE(t.failure.failed()) << t.failure.message;
  EXPECT_EQ(server_.request_count("/v1/completions"), 1);
  EXPECT_TRUE(tool_->codes.empty());  // Eq. 5: one step, scored against the expert's, not run
  ASSERT_EQ(t.segments.size(), 3u);
  EXPECT_EQ(t.segments[1].role, SegmentRole::kEnv);
  EXPECT_FALSE(t.segments[1].trainable);
  EXPECT_EQ(t.segments[1].ids, FakeTokenize("<think>\nadd\n</think>\n<code>\nprint(1+1)\n</code>"
                                            "\n<observation>\n2\n</observation>\n"));
  EXPECT_EQ(t.segments[2].role, SegmentRole::kPolicy);
  EXPECT_EQ(t.segments[2].step, 1u);
  ASSERT_EQ(t.step_rewards.size(), 1u);
  EXPECT_NEAR(t.step_rewards[0],
              rewards::GestaltSimilarity("x = 2\nprint(x * 100)", "x = 2\nprint(x * 10)"), 1e-12);
  EXPECT_LT(t.step_rewards[0], 1.0);
  EXPECT_EQ(t.reward, 0.0);  // no answer step: no outcome
  EXPECT_EQ(t.info.at("history_steps"), "1");
}

TEST_F(DeepToolEnvTest, TheActionWeightScalesStepRewardsAndWrongPhaseIsGatedToZero) {
  DeepToolEnvConfig c = Config("stepwise");
  c.rewards.terms = {{"action", 0.5}, {"accuracy", 2.0}};
  const std::string item = json{{"question", "q"},
                                {"answer", "2"},
                                {"reference_steps", {{{"think", "t"}, {"code", "print(2)"}}}}}
                               .dump();
  // The expert ran code; the policy answers right away: gate 0 (Eq. 7), accuracy still counts.
  server_.Script("/v1/completions", {Reply::Json(Sampled(kStep2, {5}))});
  auto env = Make(c);
  ASSERT_NE(env, nullptr);
  runtime::Trajectory t = Run(*env, item);
  EXPECT_EQ(t.step_rewards, (std::vector<double>{0.0}));
  EXPECT_EQ(RewardOf(t, "accuracy"), 1.0);
  EXPECT_EQ(t.reward, 2.0);
}

TEST_F(DeepToolEnvTest, AnItemWithoutReferenceStepsHasOutcomeRewardOnly) {
  server_.Script("/v1/completions", {Reply::Json(Sampled(kStep2, {5}))});
  auto env = Make(Config());
  ASSERT_NE(env, nullptr);
  runtime::Trajectory t = Run(*env, R"({"question": "1+1?", "answer": "2"})");
  EXPECT_FALSE(t.failure.failed()) << t.failure.message;
  EXPECT_TRUE(t.step_rewards.empty());
  EXPECT_EQ(t.reward, 1.0);
}

TEST_F(DeepToolEnvTest, AProgramErrorIsAnObservationTheModelReads) {
  tool_->results = {{false, json{{"stdout", "a\n"},
                                 {"stderr", "Traceback (most recent call last):\nNameError: x"},
                                 {"exit_code", 1}}}};
  server_.Script("/v1/completions",
                 {Reply::Json(Sampled(kStep1, {11})), Reply::Json(Sampled(kStep2, {21}))});
  auto env = Make(Config());
  ASSERT_NE(env, nullptr);
  runtime::Trajectory t = Run(*env, WholeItem());
  EXPECT_FALSE(t.failure.failed()) << t.failure.message;
  ASSERT_GE(t.segments.size(), 3u);
  EXPECT_EQ(t.segments[2].ids,
            FakeTokenize("\n<observation>\na\nTraceback (most recent call last):\nNameError: x\n"
                         "</observation>\n"));
}

TEST_F(DeepToolEnvTest, ASandboxThatCannotRunTheCodeEndsTheEpisodeWithAToolError) {
  tool_->results = {tools::ToolResult::Error("bwrap: cannot create namespace")};
  server_.Script("/v1/completions", {Reply::Json(Sampled(kStep1, {11}))});
  auto env = Make(Config());
  ASSERT_NE(env, nullptr);
  runtime::Trajectory t = Run(*env, WholeItem());
  EXPECT_EQ(t.failure.reason, FailureReason::kToolError);
  EXPECT_NE(t.failure.message.find("cannot create namespace"), std::string::npos);
  EXPECT_EQ(server_.request_count("/v1/completions"), 1);
  EXPECT_EQ(t.step_rewards, (std::vector<double>{1.0}));  // the step itself was right
}

TEST_F(DeepToolEnvTest, AnEndpoint500EndsTheEpisodeWithAnEndpointError) {
  server_.Script("/v1/completions",
                 {Reply::Json(Sampled(kStep1, {11})), Reply::Json(R"({"error":"boom"})", 500)});
  auto env = Make(Config());
  ASSERT_NE(env, nullptr);
  runtime::Trajectory t = Run(*env, WholeItem());
  EXPECT_EQ(t.failure.reason, FailureReason::kEndpointError) << t.failure.message;
  EXPECT_EQ(t.step_rewards.size(), 1u);
  EXPECT_EQ(t.reward, 0.0);
}

// format_errors: score (default): the episode ends scored, the gate (Eq. 7) at 0, so GRPO
// trains on it; the reason is in info["failure"]. format_errors: fail: a format_error failure.
TEST_F(DeepToolEnvTest, AMalformedStepEndsTheEpisodeScoredWithGateZeroOrFailsIt) {
  for (const std::string bad : {"I will just compute <code>print(2)</code>",
                                "<think>a</think><code>print(1)</code><code>print(2)</code>",
                                "<think>a</think>\n<code>print(1)</code> trailing words",
                                "<think>never closed <code>print(1)</code>"}) {
    for (const std::string mode : {"score", "fail"}) {
      ScriptedServer server;
      testing::ServeFakeTokenizer(server);
      server.Script("/v1/completions", {Reply::Json(Sampled(bad, {7}))});
      DeepToolEnvConfig c = Config();
      c.endpoints = {testing::ScriptedEndpoint(server, "policy")};
      c.deeptool.format_errors = mode;
      auto env = Make(c);
      ASSERT_NE(env, nullptr);
      runtime::Trajectory t = Run(*env, WholeItem());
      if (mode == "score") {
        EXPECT_FALSE(t.failure.failed()) << bad;
        EXPECT_EQ(t.info.at("failure").rfind("format_error: step 1: malformed", 0), 0u)
            << t.info.at("failure");
        ASSERT_EQ(t.segments.size(), 2u);
        EXPECT_TRUE(t.segments[1].trainable);
      } else {
        EXPECT_EQ(t.failure.reason, FailureReason::kFormatError) << bad;
        EXPECT_NE(t.failure.message.find("step 1: malformed"), std::string::npos)
            << t.failure.message;
      }
      EXPECT_EQ(t.step_rewards, (std::vector<double>{0.0})) << bad;
      EXPECT_EQ(t.reward, 0.0);
      EXPECT_EQ(server.request_count("/v1/completions"), 1);
      EXPECT_TRUE(tool_->codes.empty());
    }
  }
}

TEST_F(DeepToolEnvTest, RunawayOutputEndsTheEpisodeScoredAtZero) {
  server_.Script("/v1/completions",
                 {Reply::Json(Sampled("<think>\nand so on and so on", {1, 2, 3}, "length"))});
  DeepToolEnvConfig c = Config();
  c.deeptool.step_max_tokens = 3;
  auto env = Make(c);
  ASSERT_NE(env, nullptr);
  runtime::Trajectory t = Run(*env, WholeItem());
  EXPECT_FALSE(t.failure.failed());
  EXPECT_NE(t.info.at("failure").find("runaway"), std::string::npos);
  EXPECT_EQ(Bodies(server_, "/v1/completions")[0]["max_tokens"], 3);
  ASSERT_EQ(t.segments.size(), 2u);
  EXPECT_TRUE(t.segments[1].trainable);  // the runaway step still carries its zero reward
  EXPECT_EQ(t.step_rewards, (std::vector<double>{0.0}));
}

TEST_F(DeepToolEnvTest, TheToolCallLimitEndsTheEpisode) {
  DeepToolEnvConfig c = Config();
  c.deeptool.limits.max_tool_calls = 1;
  server_.Script("/v1/completions",
                 {Reply::Json(Sampled(kStep1, {11})), Reply::Json(Sampled(kStep1, {12}))});
  auto env = Make(c);
  ASSERT_NE(env, nullptr);
  runtime::Trajectory t = Run(*env, WholeItem());
  EXPECT_FALSE(t.failure.failed());
  EXPECT_NE(t.info.at("failure").find("tool-call limit"), std::string::npos);
  EXPECT_EQ(tool_->codes.size(), 1u);
  // Step 2 wrote code where the expert answered: gate 0.
  EXPECT_EQ(t.step_rewards, (std::vector<double>{1.0, 0.0}));
}

TEST_F(DeepToolEnvTest, MaxStepsWithoutAnAnswerEndsTheEpisode) {
  DeepToolEnvConfig c = Config();
  c.deeptool.max_steps = 2;
  server_.Script("/v1/completions",
                 {Reply::Json(Sampled(kStep1, {11})), Reply::Json(Sampled(kStep1, {12}))});
  auto env = Make(c);
  ASSERT_NE(env, nullptr);
  runtime::Trajectory t = Run(*env, WholeItem());
  EXPECT_FALSE(t.failure.failed());
  EXPECT_NE(t.info.at("failure").find("max_steps 2"), std::string::npos);
  EXPECT_EQ(t.reward, 0.0);
  EXPECT_EQ(server_.request_count("/v1/completions"), 2);
  c.deeptool.format_errors = "fail";
  server_.Script("/v1/completions",
                 {Reply::Json(Sampled(kStep1, {11})), Reply::Json(Sampled(kStep1, {12}))});
  env = Make(c);
  ASSERT_NE(env, nullptr);
  t = Run(*env, WholeItem());
  EXPECT_EQ(t.failure.reason, FailureReason::kFormatError);
  EXPECT_NE(t.failure.message.find("max_steps 2"), std::string::npos);
  EXPECT_EQ(server_.request_count("/v1/completions"), 4);
}

TEST_F(DeepToolEnvTest, TheTokenLimitAndAnOverlongInstanceEndTheEpisode) {
  DeepToolEnvConfig c = Config();
  c.deeptool.max_prompt_tokens = 10;  // the prompt alone is longer: bad data
  auto env = Make(c);
  ASSERT_NE(env, nullptr);
  runtime::Trajectory t = Run(*env, WholeItem());
  EXPECT_EQ(t.failure.reason, FailureReason::kEnvError);
  EXPECT_NE(t.failure.message.find("max_prompt_tokens"), std::string::npos);
  EXPECT_EQ(server_.request_count("/v1/completions"), 0);

  c = Config();
  c.deeptool.limits.max_total_tokens = 50;
  env = Make(c);
  ASSERT_NE(env, nullptr);
  t = Run(*env, WholeItem());
  EXPECT_FALSE(t.failure.failed());
  EXPECT_NE(t.info.at("failure").find("token limit"), std::string::npos);
}

TEST_F(DeepToolEnvTest, BadItemsFailTheEpisodeAsEnvErrors) {
  auto env = Make(Config());
  ASSERT_NE(env, nullptr);
  for (const std::string item :
       {"not json", R"({"answer": "2"})", R"({"question": "q"})",
        R"({"question": "q", "answer": "2", "steps": [{"think": "t"}]})",
        R"({"question": "q", "answer": "2", "steps": [{"think": "t", "answer": "1"},
            {"think": "t", "code": "x"}]})"}) {
    runtime::Trajectory t = Run(*env, item);
    EXPECT_EQ(t.failure.reason, FailureReason::kEnvError) << item;
  }
  EXPECT_EQ(server_.request_count("/v1/completions"), 0);
}

TEST_F(DeepToolEnvTest, ConfigErrorsNameTheField) {
  DeepToolEnvConfig c = Config();
  c.rewards.terms = {{"action", 1.0}, {"format", 1.0}};
  auto env = DeepToolEnv::Create(c, nullptr, registry_);
  ASSERT_FALSE(env.ok());
  EXPECT_NE(env.status().message().find("'format'"), std::string::npos);
  c = Config();
  c.deeptool.policy_endpoint = "nowhere";
  env = DeepToolEnv::Create(c, nullptr, registry_);
  ASSERT_FALSE(env.ok());
  EXPECT_NE(env.status().message().find("deeptool.policy_endpoint"), std::string::npos);
  c = Config();
  c.deeptool.prompts.tir = "no placeholder";
  env = DeepToolEnv::Create(c, nullptr, registry_);
  ASSERT_FALSE(env.ok());
  EXPECT_NE(env.status().message().find("{{question}}"), std::string::npos);
}

TEST_F(DeepToolEnvTest, BuildsFromAWholeRecipe) {
  const std::string recipe =
      "trainer: {algorithm: grpo}\n"
      "grpo: {group_size: 4}\n"
      "env:\n  name: deeptool\n  deeptool:\n    mode: stepwise\n"
      "    prompts: {dir: " +
      std::string(ALLOT_SOURCE_DIR) + "/configs/prompts/deeptool}\n" +
      "rewards:\n  terms: [{name: action, weight: 1.0}]\n" +
      "endpoints:\n  - {name: policy, base_url: '" + server_.url() + "', model: p}\n";
  auto env = DeepToolEnv::FromConfigText(recipe);
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  EXPECT_EQ((*env)->config().deeptool.mode, "stepwise");
  EXPECT_EQ((*env)->config().rewards.terms.size(), 1u);
}

// The learner's recipe keeps ${VAR} placeholders; the worker building the env resolves them.
TEST_F(DeepToolEnvTest, ResolvesPlaceholdersOfTheLearnersRecipe) {
  const std::string recipe =
      "trainer: {algorithm: grpo}\n"
      "env:\n  name: deeptool\n  deeptool:\n    mode: stepwise\n"
      "    prompts: {dir: " +
      std::string(ALLOT_SOURCE_DIR) + "/configs/prompts/deeptool}\n" +
      "rewards:\n  terms: [{name: action, weight: 1.0}]\n" +
      "endpoints:\n  - {name: policy, base_url: '${ALLOT_TEST_DEEPTOOL_UNSET_URL:-" +
      server_.url() + "}', model: p}\n";
  auto env = DeepToolEnv::FromConfigText(recipe);
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  const std::string text = env.value()->ConfigText();
  EXPECT_EQ(text.find("${"), std::string::npos) << text;
  EXPECT_NE(text.find(server_.url()), std::string::npos) << text;
}

// Interleaved against the real bubblewrap sandbox: a program's traceback becomes the masked
// observation the next step reads.
class DeepToolSandboxIntegrationTest : public DeepToolEnvTest {};

TEST_F(DeepToolSandboxIntegrationTest, InterleavedCodeRunsInTheRealSandbox) {
  server_.Script(
      "/v1/completions",
      {Reply::Json(Sampled("<think>\nt\n</think>\n<code>\nprint(7)\nprint(1/0)\n</code>", {11})),
       Reply::Json(Sampled(kStep2, {21}))});
  DeepToolEnvConfig c = Config();
  c.tools.sandbox.wall_timeout_s = 5;
  auto env = DeepToolEnv::Create(c);  // execute_python from tools.code
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  runtime::Trajectory t = Run(**env, WholeItem());
  EXPECT_FALSE(t.failure.failed()) << t.failure.message;
  ASSERT_EQ(t.segments.size(), 4u);
  ASSERT_EQ(t.segments[2].role, SegmentRole::kTool);
  std::string obs;
  for (int64_t id : t.segments[2].ids) obs += static_cast<char>(id - 1000);
  EXPECT_EQ(obs.rfind("\n<observation>\n7\nTraceback (most recent call last):", 0), 0u) << obs;
  EXPECT_NE(obs.find("ZeroDivisionError"), std::string::npos) << obs;
  EXPECT_EQ(t.tool_calls, 1u);
  EXPECT_EQ(t.reward, 1.0);
}

// configs/deeptool.yaml as the GRPO learner sends it (the whole recipe): the paper's numbers
// reach the env, and a step instance from `allot deeptool steps` runs under it.
TEST_F(DeepToolEnvTest, ThePaperRecipeBuildsTheEnvAndRunsAStepInstance) {
  std::ifstream f(std::string(ALLOT_SOURCE_DIR) + "/configs/deeptool.yaml");
  ASSERT_TRUE(f.good());
  std::stringstream ss;
  ss << f.rdbuf();
  std::string recipe = ss.str();
  auto replace = [&](const std::string& from, const std::string& to) {
    const size_t p = recipe.find(from);
    ASSERT_NE(p, std::string::npos) << from;
    recipe.replace(p, from.size(), to);
  };
  replace(
      "${ALLOT_POLICY_URL:?URL of the policy's OpenAI-compatible server, with LoRA loading "
      "(vLLM --enable-lora or allot serve), e.g. http://127.0.0.1:8000}",
      server_.url());
  replace("dir: configs/prompts/deeptool",
          "dir: " + std::string(ALLOT_SOURCE_DIR) + "/configs/prompts/deeptool");
  auto env = DeepToolEnv::FromConfigText(recipe);
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  const DeepToolEnvConfig& c = (*env)->config();
  EXPECT_EQ(c.deeptool.mode, "stepwise");
  EXPECT_EQ(c.deeptool.step_max_tokens, 6000);     // App. A.1 Table 4
  EXPECT_EQ(c.deeptool.max_prompt_tokens, 16000);  // App. A.1 Table 4
  ASSERT_EQ(c.rewards.terms.size(), 1u);
  EXPECT_EQ(c.rewards.terms[0].name, "action");

  server_.Script("/v1/completions", {Reply::Json(Sampled(kStep1, {11}))});
  const json history = {{{"think", "t"}, {"code", "x = 1"}, {"observation", "(no output)"}}};
  runtime::Trajectory t =
      Run(**env, json{{"question", "q"},
                      {"answer", "2"},
                      {"history", history},
                      {"reference_steps", {{{"think", "u"}, {"code", "print(1+1)"}}}}}
                     .dump());
  EXPECT_FALSE(t.failure.failed()) << t.failure.message;
  EXPECT_EQ(t.step_rewards, (std::vector<double>{1.0}));
  EXPECT_EQ(t.reward, 0.0);  // the recipe has no outcome term: Eq. 9 on the step reward alone
}

// `allot eval` on a DeepTool recipe: whole greedy episodes whatever the recipe's mode, the code
// run, the answer graded; answered, malformed and code runs counted per problem.
TEST_F(DeepToolEnvTest, EvalRunsWholeGreedyEpisodesAndCountsAnswersMalformedStepsAndCodeRuns) {
  server_.Script(
      "/v1/completions",
      {Reply::Json(Sampled(kStep1, {11})), Reply::Json(Sampled(kStep2, {21})),
       Reply::Json(Sampled(kStep2, {22})), Reply::Json(Sampled("no schema here", {23}))});
  DeepToolEnvConfig c = Config("stepwise");  // a training recipe: the eval runs whole episodes
  c.deeptool.format_errors = "fail";         // the eval scores malformed steps anyway
  auto example = [](const std::string& answer, const std::string& difficulty) {
    datasets::Example e;
    e.question = "What is 1+1?";
    e.answer = answer;
    e.answer_format = "boxed";
    e.extra["difficulty"] = difficulty;
    return e;
  };
  std::vector<datasets::Example> examples = {example("2", "add1"), example("3", "add1"),
                                             example("2", "mul21")};
  examples[2].id = "tw-test-mul21-0003";
  DeepToolEvalOptions options;
  options.tools = registry_;
  options.adapter = "tir-v3";
  auto results = RunDeepToolEval(c, examples, options);
  ASSERT_TRUE(results.ok()) << results.status().ToString();
  ASSERT_EQ(results->size(), 1u);
  const DeepToolMethodResult& r = (*results)[0];
  EXPECT_EQ(r.method, "tir");
  EXPECT_EQ(r.episodes, 3);
  EXPECT_EQ(r.correct, 1);    // code, then the right answer
  EXPECT_EQ(r.answered, 2);   // the second answered 2, not 3
  EXPECT_EQ(r.malformed, 1);  // the third broke the schema: scored, not failed
  EXPECT_EQ(r.failed, 0);
  EXPECT_EQ(r.code_runs, 1);
  EXPECT_EQ(r.steps, 4);
  EXPECT_EQ(tool_->codes, (std::vector<std::string>{"print(1+1)"}));
  ASSERT_EQ(r.items.size(), 3u);
  EXPECT_TRUE(r.items[0].correct);
  EXPECT_EQ(r.items[0].difficulty, "add1");
  EXPECT_EQ(r.items[2].format_error.rfind("format_error: step 1: malformed", 0), 0u)
      << r.items[2].format_error;
  EXPECT_EQ(r.items[2].ToJson().value("id", ""), "tw-test-mul21-0003");
  for (const json& body : Bodies(server_, "/v1/completions")) {
    EXPECT_EQ(body["temperature"], 0.0);
    EXPECT_EQ(body["model"], "tir-v3");
  }
  const json j = r.ToJson();
  EXPECT_DOUBLE_EQ(j["accuracy"].get<double>(), 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(j["code_runs_per_problem"].get<double>(), 1.0 / 3.0);
  std::ostringstream table;
  PrintDeepToolEval(*results, table);
  EXPECT_NE(table.str().find("tir correct by difficulty: add1 1/2 mul21 0/1"), std::string::npos)
      << table.str();

  options.methods = {"cot"};
  auto bad = RunDeepToolEval(c, examples, options);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("eval method 'cot'"), std::string::npos);
}

// DeepTool's descriptor declares the sections its config reads (env_descriptor_test.cc has the
// other envs'): a field added to DeepToolEnvConfig without it fails here.
TEST(DeepToolEnvDescriptorTest, SectionsAreExactlyThoseTheConfigReads) {
  EXPECT_EQ(testing::DeclaredSections(DeepToolEnvDescriptor()),
            testing::ConfigSections<DeepToolEnvConfig>());
  EXPECT_EQ(DeepToolEnvDescriptor().kind, runtime::EnvKind::kLlmPolicy);
}

}  // namespace
}  // namespace allot::envs::deeptool
