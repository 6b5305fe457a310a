// The CogER env against scripted endpoints: the exact call sequence per level, segments and
// masks, every reward component (Eq. 3-8), CoTool (Algorithm 1) with both selectors and its
// limits, the L_min solver and its disk cache, and the failure paths.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "envs/coger/coger_env.h"
#include "envs/coger/coger_eval.h"
#include "llm/client.h"
#include "tests/core/temp_dir.h"
#include "tests/envs/runtime_test_util.h"

namespace allot::envs::coger {
namespace {

using llm::testing::Reply;
using llm::testing::ScriptedServer;
using runtime::FailureReason;
using runtime::SegmentRole;
using testing::Bodies;
using testing::FakeTokenize;
using testing::Sampled;

constexpr const char* kItem = R"({"question": "What is 12*12?", "answer": "144", "min_level": 1})";

double RewardOf(const runtime::Trajectory& t, const std::string& name) {
  for (const auto& [n, v] : t.rewards) {
    if (n == name) return v;
  }
  ADD_FAILURE() << "no reward " << name;
  return -99;
}

class CogerEnvTest : public ::testing::Test {
 protected:
  void SetUp() override { testing::ServeFakeTokenizer(server_); }

  CogerEnvConfig Config() {
    CogerEnvConfig c;
    c.endpoints = {testing::ScriptedEndpoint(server_, "router"),
                   testing::ScriptedEndpoint(server_, "medium"),
                   testing::ScriptedEndpoint(server_, "large")};
    c.coger.prompts.dir = std::string(ALLOT_SOURCE_DIR) + "/configs/prompts/coger";
    c.coger.lmin.oracle = "dataset";
    c.coger.cotool.selector = "rules";
    c.tools.code = false;
    c.tools.symbolic = false;
    c.tools.statistics = false;
    return c;
  }

  std::unique_ptr<CogerEnv> Make(CogerEnvConfig c) {
    auto env = CogerEnv::Create(std::move(c));
    EXPECT_TRUE(env.ok()) << env.status().ToString();
    return env.ok() ? std::move(env).value() : nullptr;
  }

  runtime::Trajectory Run(CogerEnv& env, const std::string& item = kItem) {
    runtime::EpisodeInput in;
    in.dataset_item = item;
    in.sampling.temperature = 1.0;
    auto t = env.Run(in);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return t.ok() ? std::move(t).value() : runtime::Trajectory{};
  }

  // The endpoint model named by each /v1/completions request, in order.
  std::vector<std::string> Models() {
    std::vector<std::string> out;
    for (const auto& b : Bodies(server_, "/v1/completions")) out.push_back(b["model"]);
    return out;
  }

  ScriptedServer server_;
};

TEST_F(CogerEnvTest, L2RoutesToTheMediumModelWithChainOfThought) {
  server_.Script("/v1/completions",
                 {Reply::Json(Sampled("<question_level>L2</question_level>", {11, 12, 13}, "stop",
                                      "</question_level>")),
                  Reply::Json(Sampled("12*12 = 144, so \\boxed{144}", {21, 22}))});
  auto env = Make(Config());
  ASSERT_NE(env, nullptr);
  runtime::Trajectory t = Run(*env);
  EXPECT_FALSE(t.failure.failed()) << t.failure.message;
  EXPECT_EQ(Models(), (std::vector<std::string>{"router-model", "medium-model"}));
  auto bodies = Bodies(server_, "/v1/completions");
  // The router gets token ids and stops on the closing tag; the medium model gets the L2
  // chain-of-thought prompt as text.
  ASSERT_TRUE(bodies[0]["prompt"].is_array());
  EXPECT_EQ(bodies[0]["logprobs"], 1);
  EXPECT_NE(bodies[0]["stop"].dump().find("</question_level>"), std::string::npos);
  EXPECT_EQ(bodies[0]["temperature"], 1.0);
  ASSERT_TRUE(bodies[1]["prompt"].is_string());
  EXPECT_NE(bodies[1]["prompt"].get<std::string>().find("step by step"), std::string::npos);
  EXPECT_NE(bodies[1]["prompt"].get<std::string>().find("What is 12*12?"), std::string::npos);

  // Segments: the router prompt (masked) and its sampled output (the only trainable part).
  ASSERT_EQ(t.segments.size(), 2u);
  EXPECT_EQ(t.segments[0].role, SegmentRole::kPrompt);
  EXPECT_FALSE(t.segments[0].trainable);
  EXPECT_EQ(t.segments[0].ids, bodies[0]["prompt"].get<std::vector<int64_t>>());
  EXPECT_EQ(t.segments[1].role, SegmentRole::kPolicy);
  EXPECT_TRUE(t.segments[1].trainable);
  EXPECT_EQ(t.segments[1].ids, (std::vector<int64_t>{11, 12, 13}));
  EXPECT_EQ(t.segments[1].logprobs.size(), 3u);

  // Eq. 3-8 with L_min = 1: format 1, accuracy 1, hierarchy -0.2.
  EXPECT_EQ(RewardOf(t, "format"), 1.0);
  EXPECT_EQ(RewardOf(t, "accuracy"), 1.0);
  EXPECT_NEAR(RewardOf(t, "hierarchy"), -0.2, 1e-12);
  EXPECT_NEAR(t.reward, 1.8, 1e-12);
  ASSERT_EQ(t.rewards.size(), 3u);
  EXPECT_EQ(t.rewards[0].first, "format");  // the recipe's order
  EXPECT_EQ(t.info.at("level"), "L2");
  EXPECT_EQ(t.info.at("answered_by"), "medium");
  EXPECT_EQ(t.usage.by_endpoint.at("router").calls, 1);
  EXPECT_EQ(t.usage.by_endpoint.at("medium").calls, 1);
}

TEST_F(CogerEnvTest, L1AnswersItselfWithNoFurtherCall) {
  server_.Script("/v1/completions",
                 {Reply::Json(Sampled("\\boxed{144} <question_level>L1</question_level>", {5}))});
  auto env = Make(Config());
  ASSERT_NE(env, nullptr);
  runtime::Trajectory t = Run(*env);
  EXPECT_EQ(Models(), (std::vector<std::string>{"router-model"}));
  EXPECT_EQ(RewardOf(t, "format"), 1.0);
  EXPECT_EQ(RewardOf(t, "accuracy"), 1.0);
  EXPECT_EQ(RewardOf(t, "hierarchy"), 0.0);
  EXPECT_EQ(t.info.at("answered_by"), "router");
}

TEST_F(CogerEnvTest, L3GoesToTheLargeModelAndAWrongAnswerScoresZeroAccuracy) {
  server_.Script("/v1/completions",
                 {Reply::Json(Sampled("<question_level>L3</question_level>", {5})),
                  Reply::Json(Sampled("... \\boxed{143}", {6}))});
  auto env = Make(Config());
  ASSERT_NE(env, nullptr);
  runtime::Trajectory t = Run(*env, R"({"question": "q", "answer": "144", "min_level": 3})");
  EXPECT_EQ(Models(), (std::vector<std::string>{"router-model", "large-model"}));
  EXPECT_NE(Bodies(server_, "/v1/completions")[1]["prompt"].get<std::string>().find("at length"),
            std::string::npos);
  EXPECT_EQ(RewardOf(t, "accuracy"), 0.0);
  EXPECT_NEAR(RewardOf(t, "hierarchy"), 1.0, 1e-12);  // b(3) = 1, no penalty at L_min
}

// CoTool (Algorithm 1) with the rule-based selector: generate until <|end_tool_query|>, run the
// tool, reason over its output, insert the result between the markers, continue to EOS.
TEST_F(CogerEnvTest, L4RunsCoToolWithRules) {
  const std::string turn1 =
      "I need the product. <|begin_tool_query|> calculate 12*12 <|end_tool_query|>";
  server_.Script("/v1/completions",
                 {Reply::Json(Sampled("<question_level>L4</question_level>", {5})),
                  Reply::Json(Sampled(turn1, {31, 32, 33}, "stop", "<|end_tool_query|>")),
                  Reply::Json(Sampled("The tool says 144. Next: answer.", {41})),
                  Reply::Json(Sampled(" Therefore \\boxed{144}", {34, 35}))});
  auto env = Make(Config());
  ASSERT_NE(env, nullptr);
  runtime::Trajectory t = Run(*env);
  EXPECT_FALSE(t.failure.failed()) << t.failure.message;
  EXPECT_EQ(Models(), (std::vector<std::string>{"router-model", "large-model", "large-model",
                                                "large-model"}));
  auto bodies = Bodies(server_, "/v1/completions");
  // Turn 1 stops on the end marker; the reason-in-tool prompt carries the query and output.
  EXPECT_NE(bodies[1]["stop"].dump().find("<|end_tool_query|>"), std::string::npos);
  const std::string reason = bodies[2]["prompt"];
  EXPECT_NE(reason.find("calculate 12*12"), std::string::npos);
  EXPECT_NE(reason.find("144"), std::string::npos);
  EXPECT_NE(reason.find("status"), std::string::npos);
  // Turn 2's prompt: the CoTool prompt, turn 1's sampled ids verbatim, then the inserted result.
  const auto p2 = bodies[3]["prompt"].get<std::vector<int64_t>>();
  const auto p1 = bodies[1]["prompt"].get<std::vector<int64_t>>();
  std::vector<int64_t> expected = p1;
  for (int64_t id : {31, 32, 33}) expected.push_back(id);
  for (int64_t id : FakeTokenize("\n<|begin_tool_result|> The tool says 144. Next: answer. "
                                 "<|end_tool_result|>\n")) {
    expected.push_back(id);
  }
  EXPECT_EQ(p2, expected);
  EXPECT_EQ(t.tool_calls, 1u);
  EXPECT_EQ(t.info.at("tools"), "calculate");
  EXPECT_EQ(RewardOf(t, "accuracy"), 1.0);
  EXPECT_NEAR(RewardOf(t, "hierarchy"), -0.6, 1e-12);
  // Only the router's segments are in the trajectory; CoTool's tokens are another vocabulary.
  ASSERT_EQ(t.segments.size(), 2u);
  EXPECT_EQ(t.usage.by_endpoint.at("large").calls, 3);
}

// The cost terms (R2-Reasoner Sec. 5.1) charge every call the route caused: the router, then
// CoTool's two turns on the large model and its reasoning-in-tool read in between. Each
// scripted reply reports 10 prompt tokens and one completion token per sampled id, priced at
// $1/M input and $2/M output, 1e9 parameters on the default A100 profile.
TEST_F(CogerEnvTest, CostTermsSeeTheTokensOfEveryEndpointTheEpisodeCalled) {
  const std::string turn1 =
      "I need the product. <|begin_tool_query|> calculate 12*12 <|end_tool_query|>";
  server_.Script("/v1/completions",
                 {Reply::Json(Sampled("<question_level>L4</question_level>", {5})),
                  Reply::Json(Sampled(turn1, {31, 32, 33}, "stop", "<|end_tool_query|>")),
                  Reply::Json(Sampled("The tool says 144. Next: answer.", {41})),
                  Reply::Json(Sampled(" Therefore \\boxed{144}", {34, 35}))});
  CogerEnvConfig c = Config();
  c.rewards.terms = {{"accuracy", 1.0}, {"tokens", 0.5}, {"api_cost", 2.0}, {"energy", 1.0}};
  auto env = Make(c);
  ASSERT_NE(env, nullptr);
  runtime::Trajectory t = Run(*env);
  EXPECT_FALSE(t.failure.failed()) << t.failure.message;
  ASSERT_EQ(t.usage.total.calls, 4);

  const double prompt = 4 * 10, completion = 1 + 3 + 1 + 2;
  const double tokens = -(prompt + completion) / 1000.0;                  // tokens_scale
  const double cost = -((prompt * 1.0 + completion * 2.0) / 1e6) / 0.01;  // usd_scale
  const double energy = -(2.0 * 1e9 * (prompt + completion) * 400.0 / 312e12) / 1000.0;
  EXPECT_NEAR(RewardOf(t, "tokens"), tokens, 1e-12);
  EXPECT_NEAR(RewardOf(t, "api_cost"), cost, 1e-12);
  EXPECT_NEAR(RewardOf(t, "energy"), energy, 1e-12);
  EXPECT_EQ(RewardOf(t, "accuracy"), 1.0);
  EXPECT_NEAR(t.reward, 1.0 + 0.5 * tokens + 2.0 * cost + energy, 1e-12);
}

TEST_F(CogerEnvTest, L4WithTheJsonToolSelectionPrompt) {
  CogerEnvConfig c = Config();
  c.coger.cotool.selector = "llm";
  server_.Script(
      "/v1/completions",
      {Reply::Json(Sampled("<question_level>L4</question_level>", {5})),
       Reply::Json(
           Sampled("<|begin_tool_query|> product of twelve and twelve <|end_tool_query|>", {31})),
       Reply::Json(
           Sampled(R"({"tool_name": "calculate", "parameters": {"expression": "12*12"}})", {51})),
       Reply::Json(Sampled("It is 144.", {41})), Reply::Json(Sampled("\\boxed{144}", {34}))});
  auto env = Make(c);
  ASSERT_NE(env, nullptr);
  runtime::Trajectory t = Run(*env);
  EXPECT_FALSE(t.failure.failed()) << t.failure.message;
  auto bodies = Bodies(server_, "/v1/completions");
  ASSERT_EQ(bodies.size(), 5u);
  const std::string selection = bodies[2]["prompt"];
  EXPECT_NE(selection.find("product of twelve and twelve"), std::string::npos);
  EXPECT_NE(selection.find("calculate"), std::string::npos);  // the tool list
  EXPECT_NE(bodies[3]["prompt"].get<std::string>().find("144"), std::string::npos);
  EXPECT_EQ(RewardOf(t, "accuracy"), 1.0);
}

TEST_F(CogerEnvTest, ToolCallsOverTheLimitGetALimitReachedResult) {
  CogerEnvConfig c = Config();
  c.coger.limits.max_tool_calls = 1;
  const std::string q = "<|begin_tool_query|> calculate 2+2 <|end_tool_query|>";
  server_.Script("/v1/completions",
                 {Reply::Json(Sampled("<question_level>L4</question_level>", {5})),
                  Reply::Json(Sampled(q, {31})), Reply::Json(Sampled("four", {41})),
                  Reply::Json(Sampled(q, {32})), Reply::Json(Sampled("\\boxed{144}", {33}))});
  auto env = Make(c);
  ASSERT_NE(env, nullptr);
  runtime::Trajectory t = Run(*env);
  EXPECT_FALSE(t.failure.failed()) << t.failure.message;
  // The second query runs no tool and no reason-in-tool step.
  EXPECT_EQ(server_.request_count("/v1/completions"), 5);
  EXPECT_EQ(t.tool_calls, 1u);
  bool limit_seen = false;
  for (const auto& b : Bodies(server_, "/tokenize")) {
    limit_seen |= b["prompt"].get<std::string>().find("limit reached") != std::string::npos;
  }
  EXPECT_TRUE(limit_seen);
}

TEST_F(CogerEnvTest, MaxTurnStopsCoToolWithWhatItHas) {
  CogerEnvConfig c = Config();
  c.coger.cotool.max_turns = 1;
  server_.Script(
      "/v1/completions",
      {Reply::Json(Sampled("<question_level>L4</question_level>", {5})),
       Reply::Json(Sampled("<|begin_tool_query|> calculate 2+2 <|end_tool_query|>", {31})),
       Reply::Json(Sampled("four", {41}))});
  auto env = Make(c);
  ASSERT_NE(env, nullptr);
  runtime::Trajectory t = Run(*env);
  EXPECT_FALSE(t.failure.failed());
  EXPECT_EQ(t.info.at("cotool_max_turns"), "1");
  EXPECT_EQ(RewardOf(t, "accuracy"), 0.0);
}

TEST_F(CogerEnvTest, ToolErrorsAreShownToTheModelOrEndTheEpisodeWhenFatal) {
  const std::string q = "<|begin_tool_query|> calculate 1/0 <|end_tool_query|>";
  server_.Script("/v1/completions",
                 {Reply::Json(Sampled("<question_level>L4</question_level>", {5})),
                  Reply::Json(Sampled(q, {31})), Reply::Json(Sampled("error, go on", {41})),
                  Reply::Json(Sampled("\\boxed{144}", {33}))});
  auto env = Make(Config());
  ASSERT_NE(env, nullptr);
  runtime::Trajectory t = Run(*env);
  EXPECT_FALSE(t.failure.failed());
  EXPECT_NE(Bodies(server_, "/v1/completions")[2]["prompt"].get<std::string>().find("division"),
            std::string::npos);

  CogerEnvConfig c = Config();
  c.coger.cotool.fatal_tool_errors = true;
  server_.Script("/v1/completions",
                 {Reply::Json(Sampled("<question_level>L4</question_level>", {5})),
                  Reply::Json(Sampled(q, {31}))});
  auto fatal = Make(c);
  ASSERT_NE(fatal, nullptr);
  runtime::Trajectory f = Run(*fatal);
  EXPECT_EQ(f.failure.reason, FailureReason::kToolError);
  EXPECT_NE(f.failure.message.find("calculate"), std::string::npos) << f.failure.message;
  EXPECT_EQ(f.segments.size(), 2u);  // the router's turn is still there
}

TEST_F(CogerEnvTest, EndpointErrorEndsTheEpisodeNotTheHost) {
  server_.Script("/v1/completions",
                 {Reply::Json(Sampled("<question_level>L2</question_level>", {5})),
                  Reply::Json(R"({"error":"down"})", 500)});
  auto env = Make(Config());
  ASSERT_NE(env, nullptr);
  runtime::Trajectory t = Run(*env);
  EXPECT_EQ(t.failure.reason, FailureReason::kEndpointError);
  EXPECT_NE(t.failure.message.find("medium"), std::string::npos) << t.failure.message;
  EXPECT_TRUE(t.rewards.empty());
  EXPECT_EQ(t.segments.size(), 2u);
  EXPECT_EQ(t.usage.by_endpoint.at("medium").failed_calls, 1);

  // The router itself failing: no segments beyond the prompt.
  server_.Script("/v1/completions", {Reply::Json(R"({"error":"down"})", 500)});
  runtime::Trajectory r = Run(*env);
  EXPECT_EQ(r.failure.reason, FailureReason::kEndpointError);
  EXPECT_EQ(r.segments.size(), 1u);
}

TEST_F(CogerEnvTest, MalformedTagsRouteNowhereAndScoreZero) {
  auto env = Make(Config());
  ASSERT_NE(env, nullptr);
  for (const std::string out : {"I think this is L2", "<question_level>L7</question_level>",
                                "<question_level>L2</question_level> and more"}) {
    server_.Script("/v1/completions", {Reply::Json(Sampled(out, {5}))});
    const int before = server_.request_count("/v1/completions");
    runtime::Trajectory t = Run(*env);
    EXPECT_EQ(server_.request_count("/v1/completions"), before + 1) << out;
    EXPECT_FALSE(t.failure.failed()) << out;
    EXPECT_EQ(t.info.at("level"), "none") << out;
    EXPECT_EQ(RewardOf(t, "format"), 0.0) << out;
    EXPECT_EQ(RewardOf(t, "accuracy"), 0.0) << out;
    EXPECT_EQ(RewardOf(t, "hierarchy"), 0.0) << out;
  }
}

TEST_F(CogerEnvTest, RunawayGenerationIsScoredNotDropped) {
  // The router running out of tokens without a tag is scored, not failed: it is the policy's
  // own sample and GRPO learns from it.
  server_.Script("/v1/completions", {Reply::Json(Sampled("blah blah", {5, 5, 5}, "length"))});
  auto env = Make(Config());
  ASSERT_NE(env, nullptr);
  runtime::Trajectory r = Run(*env);
  EXPECT_FALSE(r.failure.failed());
  EXPECT_EQ(r.info.at("router_finish"), "length");
  EXPECT_EQ(RewardOf(r, "format"), 0.0);
  // CoTool running out of tokens with neither EOS nor a tool query is L4's (wrong) answer,
  // scored and paid for like a truncated L2/L3 answer, not a failed episode that GRPO drops.
  server_.Script("/v1/completions",
                 {Reply::Json(Sampled("<question_level>L4</question_level>", {5})),
                  Reply::Json(Sampled("and so on and so on", {31, 31, 31}, "length"))});
  runtime::Trajectory t = Run(*env);
  EXPECT_FALSE(t.failure.failed()) << t.failure.message;
  EXPECT_EQ(t.info.at("level"), "L4");
  EXPECT_EQ(t.info.at("answer_truncated"), "1");
  EXPECT_NE(t.info.at("answer_runaway").find("runaway"), std::string::npos);
  EXPECT_EQ(RewardOf(t, "format"), 1.0);
  EXPECT_EQ(RewardOf(t, "accuracy"), 0.0);
  EXPECT_EQ(t.usage.total.calls, 2);  // the router and CoTool's turn, both charged
}

TEST_F(CogerEnvTest, BadDatasetItemIsAnEnvFailure) {
  auto env = Make(Config());
  ASSERT_NE(env, nullptr);
  runtime::Trajectory t = Run(*env, R"({"answer": "1"})");
  EXPECT_EQ(t.failure.reason, FailureReason::kEnvError);
  EXPECT_NE(t.failure.message.find("question"), std::string::npos);
  EXPECT_EQ(server_.requests().size(), 0u);
}

// L_min = the lowest level whose answer is correct, solved once per query and cached on disk.
TEST_F(CogerEnvTest, LminSolverRunsOncePerQueryAndCachesOnDisk) {
  allot::testing::TempDir dir;
  CogerEnvConfig c = Config();
  c.coger.lmin.oracle = "solver";
  c.coger.lmin.cache_path = dir.Join("lmin.jsonl");
  const std::string item = R"({"question": "What is 12*12?", "answer": "144"})";
  server_.Script("/v1/completions",
                 {Reply::Json(Sampled("<question_level>L3</question_level>", {5})),
                  Reply::Json(Sampled("\\boxed{144}", {6})),  // L3 answer
                  Reply::Json(Sampled("\\boxed{100}", {7})),  // solver L1: wrong
                  Reply::Json(Sampled("\\boxed{144}", {8})),  // solver L2: right
                  Reply::Json(Sampled("<question_level>L2</question_level>", {5})),
                  Reply::Json(Sampled("\\boxed{144}", {6}))});
  auto env = Make(c);
  ASSERT_NE(env, nullptr);
  runtime::Trajectory t = Run(*env, item);
  EXPECT_EQ(Models(), (std::vector<std::string>{"router-model", "large-model", "router-model",
                                                "medium-model"}));
  // L_min = 2: b = 0.5, penalty 0.2 for L3.
  EXPECT_NEAR(RewardOf(t, "hierarchy"), 0.3, 1e-12);
  // The solver's calls (L1 on the router's endpoint, L2 on the medium one) are the reward's:
  // reported in info, not accounted to the episode that happened to need L_min.
  EXPECT_EQ(t.usage.total.calls, 2);
  EXPECT_EQ(t.usage.by_endpoint.at("router").calls, 1);
  EXPECT_EQ(t.usage.by_endpoint.count("medium"), 0u);
  EXPECT_EQ(t.usage.by_endpoint.at("large").calls, 1);
  EXPECT_EQ(t.info.at("lmin_solver_calls"), "2");
  EXPECT_GT(std::stod(t.info.at(kOracleCostInfo)), 0.0);
  runtime::Trajectory again = Run(*env, item);
  EXPECT_EQ(again.usage.total.calls, 2);  // cached: only the routed calls
  EXPECT_EQ(again.info.count("lmin_solver_calls"), 0u);
  EXPECT_EQ(server_.request_count("/v1/completions"), 6);  // no new solver calls
  EXPECT_NEAR(RewardOf(again, "hierarchy"), 0.5, 1e-12);
  EXPECT_EQ(env->lmin_cache().size(), 2u);

  // A fresh env reads the file: still no solver calls.
  server_.Script("/v1/completions",
                 {Reply::Json(Sampled("<question_level>L2</question_level>", {5})),
                  Reply::Json(Sampled("\\boxed{144}", {6}))});
  auto fresh = Make(c);
  ASSERT_NE(fresh, nullptr);
  EXPECT_EQ(fresh->lmin_cache().size(), 2u);
  runtime::Trajectory third = Run(*fresh, item);
  EXPECT_EQ(server_.request_count("/v1/completions"), 8);
  EXPECT_NEAR(RewardOf(third, "hierarchy"), 0.5, 1e-12);
}

// The same decision costs the same whether its episode missed the level-outcome cache (and ran
// the L_min oracle) or hit it: the accounting, which the trainer's budget_metric and
// cost_usd_per_episode read, and the cost terms hold the decision's calls only; the oracle's
// spend is its own field. (The oracle's calls used to be charged to whichever episode missed.)
TEST_F(CogerEnvTest, TheOracleIsNotChargedToTheEpisodeThatMissesTheCache) {
  CogerEnvConfig c = Config();
  c.coger.lmin.oracle = "solver";
  c.rewards.terms.push_back({"api_cost", 1.0});
  const std::string item = R"({"question": "What is 12*12?", "answer": "144"})";
  server_.Script("/v1/completions",
                 {Reply::Json(Sampled("<question_level>L2</question_level>", {5})),
                  Reply::Json(Sampled("\\boxed{144}", {6})),  // L2 answer
                  Reply::Json(Sampled("\\boxed{100}", {7})),  // solver L1: wrong
                  Reply::Json(Sampled("\\boxed{144}", {8})),  // solver L2: right
                  Reply::Json(Sampled("<question_level>L2</question_level>", {5})),
                  Reply::Json(Sampled("\\boxed{144}", {6}))});
  auto env = Make(c);
  ASSERT_NE(env, nullptr);
  runtime::Trajectory missed = Run(*env, item);
  runtime::Trajectory hit = Run(*env, item);
  EXPECT_EQ(server_.request_count("/v1/completions"), 6);
  ASSERT_FALSE(missed.failure.failed()) << missed.failure.message;
  ASSERT_FALSE(hit.failure.failed()) << hit.failure.message;
  EXPECT_GT(hit.usage.total.cost_usd, 0.0);
  EXPECT_DOUBLE_EQ(missed.usage.total.cost_usd, hit.usage.total.cost_usd);
  EXPECT_DOUBLE_EQ(missed.usage.total.energy_j, hit.usage.total.energy_j);
  EXPECT_EQ(missed.usage.total.calls, hit.usage.total.calls);
  EXPECT_EQ(missed.usage.total.prompt_tokens + missed.usage.total.completion_tokens,
            hit.usage.total.prompt_tokens + hit.usage.total.completion_tokens);
  EXPECT_DOUBLE_EQ(RewardOf(missed, "api_cost"), RewardOf(hit, "api_cost"));
  EXPECT_DOUBLE_EQ(missed.reward, hit.reward);
  // The oracle's spend: its L1 and L2 calls, in its own field, on the episode that ran them.
  ASSERT_EQ(missed.info.count(kOracleCostInfo), 1u);
  EXPECT_GT(std::stod(missed.info.at(kOracleCostInfo)), 0.0);
  EXPECT_EQ(hit.info.count(kOracleCostInfo), 0u);
}

TEST_F(CogerEnvTest, AHierarchyTermWithoutAnOracleIsAnError) {
  CogerEnvConfig c = Config();
  c.coger.lmin.oracle = "none";
  auto env = CogerEnv::Create(c);
  ASSERT_FALSE(env.ok());
  EXPECT_NE(env.status().message().find("coger.lmin.oracle"), std::string::npos);
  // rewards.hierarchy.oracle set against coger.lmin.oracle is an error naming both, not a silent
  // override of one by the other; agreeing, or left at its default, it is fine.
  CogerEnvConfig clash = Config();
  clash.coger.lmin.oracle = "solver";
  clash.rewards.hierarchy.oracle = "dataset";
  auto clashing = CogerEnv::Create(clash);
  ASSERT_FALSE(clashing.ok());
  EXPECT_NE(clashing.status().message().find("rewards.hierarchy.oracle: 'dataset'"),
            std::string::npos)
      << clashing.status().message();
  EXPECT_NE(clashing.status().message().find("coger.lmin.oracle: 'solver'"), std::string::npos);
  clash.rewards.hierarchy.oracle = "solver";
  EXPECT_TRUE(CogerEnv::Create(clash).ok());
  clash.rewards.hierarchy.oracle = "outcomes";
  EXPECT_TRUE(CogerEnv::Create(clash).ok());
  // Without the hierarchy term no oracle is needed.
  c.rewards.terms = {{"format", 1.0}, {"accuracy", 1.0}};
  EXPECT_TRUE(CogerEnv::Create(c).ok());
  // The dataset oracle with an item lacking min_level fails the episode instead of scoring 0.
  server_.Script("/v1/completions",
                 {Reply::Json(Sampled("\\boxed{144} <question_level>L1</question_level>", {5}))});
  auto ds = Make(Config());
  ASSERT_NE(ds, nullptr);
  runtime::Trajectory t = Run(*ds, R"({"question": "q", "answer": "144"})");
  EXPECT_EQ(t.failure.reason, FailureReason::kEnvError);
  EXPECT_NE(t.failure.message.find("min_level"), std::string::npos) << t.failure.message;
  // And the outcomes oracle with no per-level outcomes is an error too.
  rewards::RewardConfig rc;
  rc.hierarchy.oracle = "outcomes";
  auto composed = rewards::ComposedReward::Create(rc);
  ASSERT_TRUE(composed.ok());
  rewards::RewardInput in;
  in.response = "<question_level>L2</question_level>";
  in.reference = "1";
  EXPECT_FALSE((*composed)->Compute(in).ok());
}

TEST_F(CogerEnvTest, ConfigErrorsNameTheField) {
  CogerEnvConfig c = Config();
  c.coger.l2.endpoint = "nope";
  auto env = CogerEnv::Create(c);
  ASSERT_FALSE(env.ok());
  EXPECT_NE(env.status().message().find("coger.l2.endpoint"), std::string::npos);
  c = Config();
  c.coger.prompts.router = "no placeholder here";
  env = CogerEnv::Create(c);
  ASSERT_FALSE(env.ok());
  EXPECT_NE(env.status().message().find("coger.prompts.router"), std::string::npos);
  c = Config();
  c.coger.prompts.l2_cot = "{{question}} {{typo}}";
  EXPECT_NE(CogerEnv::Create(c).status().message().find("{{typo}}"), std::string::npos);
  // The env_config text round-trips (prompt texts inline) and unknown keys fail loudly.
  auto made = Make(Config());
  ASSERT_NE(made, nullptr);
  EXPECT_TRUE(CogerEnv::FromConfigText(made->ConfigText()).ok());
  EXPECT_FALSE(CogerEnv::FromConfigText("coger: {routr_endpoint: x}").ok());
  // A whole recipe, as the GRPO learner sends it: the trainer's sections are ignored.
  std::string recipe = "run: {name: x}\ntrainer: {algorithm: grpo}\ngrpo: {group_size: 12}\n";
  recipe += "env: {name: coger, coger: {lmin: {oracle: dataset}, prompts: {dir: \"" +
            std::string(ALLOT_SOURCE_DIR) + "/configs/prompts/coger\"}}}\n";
  recipe += "tools: {code: false}\nendpoints:\n";
  for (const char* name : {"router", "medium", "large"}) {
    recipe +=
        "  - {name: " + std::string(name) + ", model: m, base_url: \"" + server_.url() + "\"}\n";
  }
  auto from_recipe = CogerEnv::FromConfigText(recipe);
  EXPECT_TRUE(from_recipe.ok()) << from_recipe.status().ToString();
}

// Table 4 side by side: the router and a fixed level over the same question.
TEST_F(CogerEnvTest, EvalReportsAccuracyCostAndLevelsPerMethod) {
  server_.Script("/v1/completions",
                 {Reply::Json(Sampled("<question_level>L2</question_level>", {5})),
                  Reply::Json(Sampled("\\boxed{144}", {6})),    // router -> L2: right
                  Reply::Json(Sampled("\\boxed{143}", {7}))});  // fixed L3: wrong
  datasets::Example e;
  e.question = "What is 12*12?";
  e.answer = "144";
  e.answer_format = "boxed";
  e.extra["difficulty"] = "mul22";
  CogerEvalOptions o;
  o.methods = {"router", "L3"};
  auto r = RunCogerEval(Config(), {e}, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].method, "router");
  EXPECT_EQ((*r)[0].accuracy(), 1.0);
  EXPECT_EQ((*r)[0].levels[2], 1);
  EXPECT_EQ((*r)[0].llm_calls, 2);
  EXPECT_GT((*r)[0].cost_usd, 0.0);
  EXPECT_EQ((*r)[1].accuracy(), 0.0);
  EXPECT_EQ((*r)[1].levels[3], 1);
  // Per item: where it went, whether it was right, its cost and its difficulty.
  const nlohmann::json routed = (*r)[0].ToJson()["items"];
  ASSERT_EQ(routed.size(), 1u);
  EXPECT_EQ(routed[0]["level"], 2);
  EXPECT_EQ(routed[0]["correct"], true);
  EXPECT_EQ(routed[0]["difficulty"], "mul22");
  EXPECT_DOUBLE_EQ(routed[0]["cost_usd"].get<double>(), (*r)[0].cost_usd);
  EXPECT_EQ((*r)[1].ToJson()["items"][0]["correct"], false);
  EXPECT_EQ((*r)[1].ToJson()["items"][0]["level"], 3);
  EXPECT_EQ(Models(), (std::vector<std::string>{"router-model", "medium-model", "large-model"}));
  std::ostringstream table;
  PrintCogerEval(*r, table);
  EXPECT_NE(table.str().find("router"), std::string::npos);
  EXPECT_FALSE(RunCogerEval(Config(), {e}, {.methods = {"L9"}}).ok());

  // A failed episode is counted by its reason, in the JSON and under the table (an eval that
  // only said "failed 11" left the reason to guesswork).
  server_.Script("/v1/completions", {Reply::Json(R"({"error":"down"})", 500)});
  auto failed = RunCogerEval(Config(), {e}, {.methods = {"L3"}});
  ASSERT_TRUE(failed.ok()) << failed.status().ToString();
  EXPECT_EQ((*failed)[0].failed, 1);
  EXPECT_EQ((*failed)[0].ToJson()["failures"], nlohmann::json({{"endpoint_error", 1}}));
  EXPECT_EQ((*failed)[0].ToJson()["items"][0]["failure"], "endpoint_error");
  std::ostringstream failed_table;
  PrintCogerEval(*failed, failed_table);
  EXPECT_NE(failed_table.str().find("L3 failures: endpoint_error 1"), std::string::npos)
      << failed_table.str();
}

// CogER's parser took "problem" alone beside "question", and "answer" alone: RLoT's and ATLAS's
// data (prompt, reference, format) failed every episode here.
TEST(CogerItemTest, AcceptsEveryEnvsFieldNamesAndMinLevelUnderExtra) {
  auto item = ParseCogerItem(
      R"({"prompt": "Q", "reference": 7, "format": "number", "extra": {"min_level": 2}})",
      rewards::AnswerFormat::kBoxed);
  ASSERT_TRUE(item.ok()) << item.status().ToString();
  EXPECT_EQ(item->question, "Q");
  EXPECT_EQ(item->reference, "7");
  EXPECT_EQ(item->format, rewards::AnswerFormat::kNumber);
  EXPECT_EQ(item->min_level, 2);
  auto bad = ParseCogerItem(R"({"question": "Q", "answer": "1", "min_level": "two"})",
                            rewards::AnswerFormat::kBoxed);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("field 'min_level'"), std::string::npos);
}

}  // namespace
}  // namespace allot::envs::coger
