// The R2-Reasoner env against scripted endpoints: the exact call sequence (decomposer,
// allocator, one call per subtask in order, integration), segments, masks and role tags, the
// Eq. 1 reward, cost and energy, the procedural review, limits and the failure paths.
#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "envs/r2/r2_env.h"
#include "llm/client.h"
#include "tests/envs/runtime_test_util.h"

namespace allot::envs::r2 {
namespace {

using llm::testing::Reply;
using llm::testing::ScriptedServer;
using runtime::FailureReason;
using runtime::SegmentRole;
using testing::Bodies;
using testing::FakeTokenize;
using testing::Sampled;

constexpr const char* kItem = R"({"question": "What is (3+4)*6?", "answer": "42"})";
constexpr const char* kDecomposition = "Subtask 1: Compute 3+4.\nSubtask 2: Multiply it by 6.";
constexpr const char* kAllocation =
    "Subtask 1: difficulty 1, model small\nSubtask 2: difficulty 3, model big";

class R2EnvTest : public ::testing::Test {
 protected:
  void SetUp() override { testing::ServeFakeTokenizer(server_); }

  R2EnvConfig Config() {
    R2EnvConfig c;
    c.endpoints = {testing::ScriptedEndpoint(server_, "router"),
                   testing::ScriptedEndpoint(server_, "small"),
                   testing::ScriptedEndpoint(server_, "big")};
    c.endpoints[1].group = "SLM";
    c.endpoints[2].group = "LLM";
    c.endpoints[2].params_b = 10.0;
    c.endpoints[2].usd_per_m_input = 5.0;
    c.endpoints[2].usd_per_m_output = 15.0;
    c.r2.prompts.dir = std::string(ALLOT_SOURCE_DIR) + "/configs/prompts/r2";
    return c;
  }

  std::unique_ptr<R2Env> Make(R2EnvConfig c) {
    auto env = R2Env::Create(std::move(c));
    EXPECT_TRUE(env.ok()) << env.status().ToString();
    return env.ok() ? std::move(env).value() : nullptr;
  }

  runtime::Trajectory Run(R2Env& env, const std::string& item = kItem) {
    runtime::EpisodeInput in;
    in.dataset_item = item;
    in.sampling.temperature = 1.0;
    auto t = env.Run(in);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return t.ok() ? std::move(t).value() : runtime::Trajectory{};
  }

  std::vector<std::string> Models() {
    std::vector<std::string> out;
    for (const auto& b : Bodies(server_, "/v1/completions")) out.push_back(b["model"]);
    return out;
  }

  void ScriptPlan(const std::string& answer = "\\boxed{42}") {
    server_.Script(
        "/v1/completions",
        {Reply::Json(Sampled(kDecomposition, {11, 12})),
         Reply::Json(Sampled(kAllocation, {21, 22, 23})), Reply::Json(Sampled("7", {31})),
         Reply::Json(Sampled("42", {41})), Reply::Json(Sampled(answer, {51, 52}))});
  }

  ScriptedServer server_;
};

TEST_F(R2EnvTest, DecomposesAllocatesExecutesInOrderAndIntegrates) {
  ScriptPlan();
  auto env = Make(Config());
  ASSERT_NE(env, nullptr);
  runtime::Trajectory t = Run(*env);
  EXPECT_FALSE(t.failure.failed()) << t.failure.message;
  // Decomposer, allocator (the policy), subtask 1 on small, subtask 2 on big, integration by the
  // last subtask's model.
  EXPECT_EQ(Models(), (std::vector<std::string>{"router-model", "router-model", "small-model",
                                                "big-model", "big-model"}));
  auto bodies = Bodies(server_, "/v1/completions");
  // The policy sees token ids; the allocator's prompt continues the decomposer's conversation.
  ASSERT_TRUE(bodies[0]["prompt"].is_array());
  ASSERT_TRUE(bodies[1]["prompt"].is_array());
  const auto p0 = bodies[0]["prompt"].get<std::vector<int64_t>>();
  const auto p1 = bodies[1]["prompt"].get<std::vector<int64_t>>();
  ASSERT_GT(p1.size(), p0.size() + 2);
  EXPECT_TRUE(std::equal(p0.begin(), p0.end(), p1.begin()));
  EXPECT_EQ(p1[p0.size()], 11);
  EXPECT_EQ(p1[p0.size() + 1], 12);
  // Subtask 2 sees subtask 1's result; the integration sees both.
  const std::string s1 = bodies[2]["prompt"], s2 = bodies[3]["prompt"], in = bodies[4]["prompt"];
  EXPECT_NE(s1.find("Compute 3+4."), std::string::npos);
  EXPECT_NE(s1.find("(none)"), std::string::npos);
  EXPECT_NE(s2.find("Step 1: Compute 3+4.\nResult: 7"), std::string::npos);
  EXPECT_NE(s2.find("Multiply it by 6."), std::string::npos);
  EXPECT_NE(in.find("Result: 42"), std::string::npos);
  EXPECT_NE(in.find("What is (3+4)*6?"), std::string::npos);

  // Segments: prompt, decomposition (policy), allocator prompt, allocation (policy), results.
  ASSERT_EQ(t.segments.size(), 6u);
  const std::vector<SegmentRole> roles = {SegmentRole::kPrompt,     SegmentRole::kPolicy,
                                          SegmentRole::kEnv,        SegmentRole::kPolicy,
                                          SegmentRole::kOtherModel, SegmentRole::kOtherModel};
  for (size_t i = 0; i < roles.size(); ++i) {
    EXPECT_EQ(t.segments[i].role, roles[i]) << i;
    EXPECT_EQ(t.segments[i].trainable, roles[i] == SegmentRole::kPolicy) << i;
  }
  EXPECT_EQ(t.segments[0].ids, p0);
  EXPECT_EQ(t.segments[1].ids, (std::vector<int64_t>{11, 12}));
  EXPECT_EQ(t.segments[1].logprobs.size(), 2u);
  EXPECT_EQ(t.segments[1].source, "decomposer@router");
  EXPECT_EQ(t.segments[3].ids, (std::vector<int64_t>{21, 22, 23}));
  EXPECT_EQ(t.segments[3].source, "allocator@router");
  EXPECT_EQ(t.segments[4].ids, FakeTokenize("\nResult 1: 7\n"));
  EXPECT_EQ(t.segments[4].source, "small");
  EXPECT_TRUE(t.segments[4].logprobs.empty());

  ASSERT_EQ(t.rewards.size(), 1u);
  EXPECT_EQ(t.rewards[0].first, "accuracy");
  EXPECT_EQ(t.rewards[0].second, 1.0);
  EXPECT_EQ(t.reward, 1.0);
  EXPECT_EQ(t.info.at("models"), "small,big");
  EXPECT_EQ(t.info.at("num_subtasks"), "2");
  EXPECT_EQ(t.info.at("integrator"), "big");
}

// Sec. 4.3: the decomposer and the allocator are two models. With one adapter per role in the
// policy snapshot, each turn goes to its role's served adapter and its segment carries that
// adapter's version (with one shared name, the allocator sampled the decomposer's adapter).
TEST_F(R2EnvTest, EachRoleSamplesFromItsOwnAdapter) {
  auto served_as = [](const std::string& reply, const std::string& model) {
    nlohmann::json j = nlohmann::json::parse(reply);
    j["model"] = model;
    return j.dump();
  };
  server_.Script("/v1/completions",
                 {Reply::Json(served_as(Sampled(kDecomposition, {11, 12}), "policy-decomposer-v3")),
                  Reply::Json(served_as(Sampled(kAllocation, {21, 22, 23}), "policy-allocator-v1")),
                  Reply::Json(Sampled("7", {31})), Reply::Json(Sampled("42", {41})),
                  Reply::Json(Sampled("\\boxed{42}", {51, 52}))});
  auto env = Make(Config());
  ASSERT_NE(env, nullptr);
  auto policy = std::make_shared<runtime::PolicySnapshot>();
  policy->kind = runtime::PolicySnapshot::Kind::kLoraAdapter;
  policy->version = 3;
  policy->adapter_name = "policy-decomposer-v3";
  policy->adapter_uri = "/adapters/decomposer/v3";
  policy->role_adapters = {{"decomposer", "policy-decomposer-v3", 3, "/adapters/decomposer/v3"},
                           {"allocator", "policy-allocator-v1", 1, "/adapters/allocator/v1"}};
  runtime::EpisodeInput in;
  in.dataset_item = kItem;
  in.sampling.temperature = 1.0;
  in.policy = policy;
  auto t = env->Run(in);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_FALSE(t->failure.failed()) << t->failure.message;
  const std::vector<std::string> models = Models();
  ASSERT_GE(models.size(), 2u);
  EXPECT_EQ(models[0], "policy-decomposer-v3");
  EXPECT_EQ(models[1], "policy-allocator-v1");
  ASSERT_GE(t->segments.size(), 4u);
  EXPECT_EQ(t->segments[1].source, "decomposer@router");
  EXPECT_EQ(t->segments[1].policy_version, 3u);
  EXPECT_EQ(t->segments[3].source, "allocator@router");
  EXPECT_EQ(t->segments[3].policy_version, 1u);

  // A snapshot with adapters per role but none for the allocator is an env error naming it.
  server_.Script("/v1/completions", {Reply::Json(Sampled(kDecomposition, {11, 12}))});
  policy->role_adapters.pop_back();
  auto t2 = env->Run(in);
  ASSERT_TRUE(t2.ok());
  EXPECT_EQ(t2->failure.reason, FailureReason::kEnvError);
  EXPECT_NE(t2->failure.message.find("no adapter for the allocator role"), std::string::npos)
      << t2->failure.message;
}

// Sec. 4.4 (3)-(4) with references: "#k" in a subtask becomes result k's answer in
// {{subtask_filled}}, and integrator last_result takes the last result as A_final (no call).
TEST_F(R2EnvTest, FillsEarlierResultsIntoSubtasksAndCanSkipTheIntegration) {
  server_.Script("/v1/completions",
                 {Reply::Json(Sampled("1. 3 + 4\n2. #1 * 6", {11, 12})),
                  Reply::Json(Sampled(kAllocation, {21, 22, 23})),
                  Reply::Json(Sampled("The answer is \\boxed{7}", {31})),
                  Reply::Json(Sampled("The answer is \\boxed{42}", {41}))});
  R2EnvConfig c = Config();
  c.r2.prompts.subtask = "What is {{subtask_filled}}?";
  c.r2.integrator = kLastResult;
  auto env = Make(c);
  ASSERT_NE(env, nullptr);
  runtime::Trajectory t = Run(*env);
  EXPECT_FALSE(t.failure.failed()) << t.failure.message;
  EXPECT_EQ(Models(), (std::vector<std::string>{"router-model", "router-model", "small-model",
                                                "big-model"}));
  auto bodies = Bodies(server_, "/v1/completions");
  EXPECT_EQ(bodies[2]["prompt"], "What is 3 + 4?");
  EXPECT_EQ(bodies[3]["prompt"], "What is 7 * 6?");
  EXPECT_EQ(t.reward, 1.0);
  EXPECT_EQ(t.info.at("integrator"), "big");
  EXPECT_EQ(t.info.at("final_answer"), "The answer is \\boxed{42}");

  // A subtask prompt must name the subtask one way or the other.
  c.r2.prompts.subtask = "What is {{question}}?";
  auto bad = R2Env::Create(c);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("r2.prompts.subtask"), std::string::npos);
}

// The data tools call Execute directly: an empty plan is a failure, not an integration of
// nothing (integrator "last" names the last subtask's model).
TEST_F(R2EnvTest, ExecutingNoSubtaskFailsTheExecution) {
  auto env = Make(Config());
  ASSERT_NE(env, nullptr);
  runtime::EpisodeInput input;
  runtime::Episode ep(&env->client(), env->config().r2.limits, input);
  Execution ex = env->Execute(ep, "q", {}, {});
  EXPECT_TRUE(ex.failure.failed());
  EXPECT_NE(ex.failure.message.find("no subtask"), std::string::npos);
  EXPECT_TRUE(Models().empty());
}

TEST(FillResultsTest, ReplacesOnlyReferencesToEarlierResults) {
  const std::vector<std::string> r = {"The answer is \\boxed{480}", "  54 \n"};
  const auto boxed = rewards::AnswerFormat::kBoxed;
  EXPECT_EQ(FillResults("#1 + #2", r, boxed), "480 + 54");  // no box: the trimmed text
  EXPECT_EQ(FillResults("#3 + #0 + # + a#b + #", r, boxed), "#3 + #0 + # + a#b + #");
  EXPECT_EQ(FillResults("#12 * #1x", r, boxed), "#12 * 480x");
  EXPECT_EQ(FillResults("#1", {}, boxed), "#1");
  EXPECT_EQ(FillResults("#00001", r, boxed), "#00001");  // more than 3 digits: kept
}

// Sec. 5.1: cost from the pool's per-1M prices, energy = 2 N tokens TDP / peak FLOP/s.
TEST_F(R2EnvTest, ReportsCostInCentsAndEnergyInJoules) {
  ScriptPlan();
  auto env = Make(Config());
  ASSERT_NE(env, nullptr);
  runtime::Trajectory t = Run(*env);
  // Every scripted reply bills 10 prompt tokens and its ids as completion tokens.
  const double router = 2 * (10 * 1.0 + 0) * 1e-6 + (2 + 3) * 2.0e-6;
  const double small = 10 * 1.0e-6 + 1 * 2.0e-6;
  const double big = 2 * 10 * 5.0e-6 + (1 + 2) * 15.0e-6;
  EXPECT_NEAR(t.usage.total.cost_usd, router + small + big, 1e-15);
  EXPECT_NEAR(std::stod(t.info.at("cost_cents")), (router + small + big) * 100, 1e-9);
  const double jpf = 400.0 / 312e12;
  const double energy = 2 * 1e9 * (20 + 5) * jpf + 2 * 1e9 * 11 * jpf + 2 * 10e9 * 23 * jpf;
  EXPECT_NEAR(t.usage.total.energy_j, energy, energy * 1e-12);
  EXPECT_NEAR(std::stod(t.info.at("energy_j")), energy, energy * 1e-5);
  EXPECT_EQ(t.usage.by_endpoint.at("router").calls, 2);
  EXPECT_EQ(t.usage.by_endpoint.at("small").calls, 1);
  EXPECT_EQ(t.usage.by_endpoint.at("big").calls, 2);
}

TEST_F(R2EnvTest, AWrongFinalAnswerScoresZero) {
  ScriptPlan("\\boxed{41}");
  auto env = Make(Config());
  ASSERT_NE(env, nullptr);
  runtime::Trajectory t = Run(*env);
  EXPECT_FALSE(t.failure.failed());
  EXPECT_EQ(t.reward, 0.0);
}

TEST_F(R2EnvTest, AMalformedSubtaskListExecutesNothingAndScoresZero) {
  server_.Script("/v1/completions",
                 {Reply::Json(Sampled("First add, then multiply. \\boxed{42}", {11}))});
  auto env = Make(Config());
  ASSERT_NE(env, nullptr);
  runtime::Trajectory t = Run(*env);
  EXPECT_FALSE(t.failure.failed()) << t.failure.message;  // trainable: the policy learns
  EXPECT_EQ(Models(), (std::vector<std::string>{"router-model"}));
  EXPECT_EQ(t.reward, 0.0);  // the boxed answer in a bad decomposition earns nothing
  EXPECT_NE(t.info.at("format_error").find("no numbered subtask"), std::string::npos);
  ASSERT_EQ(t.segments.size(), 2u);
  EXPECT_TRUE(t.segments[1].trainable);
  EXPECT_EQ(t.segments[1].source, "decomposer@router");
}

TEST_F(R2EnvTest, AnAllocationToAModelOutsideThePoolScoresZero) {
  server_.Script("/v1/completions", {Reply::Json(Sampled(kDecomposition, {11})),
                                     Reply::Json(Sampled("Subtask 1: difficulty 1, model small\n"
                                                         "Subtask 2: difficulty 2, model gpt-9",
                                                         {21}))});
  auto env = Make(Config());
  ASSERT_NE(env, nullptr);
  runtime::Trajectory t = Run(*env);
  EXPECT_FALSE(t.failure.failed());
  EXPECT_EQ(Models().size(), 2u);
  EXPECT_EQ(t.reward, 0.0);
  EXPECT_NE(t.info.at("format_error").find("'gpt-9' is not in the pool"), std::string::npos);
  ASSERT_EQ(t.segments.size(), 4u);
  EXPECT_EQ(t.segments[3].source, "allocator@router");
}

TEST_F(R2EnvTest, ARunawayDecompositionScoresZero) {
  server_.Script("/v1/completions",
                 {Reply::Json(Sampled("Subtask 1: Compute 3+4.\nSubtask 2: and so on and", {11, 12},
                                      "length"))});
  auto env = Make(Config());
  ASSERT_NE(env, nullptr);
  runtime::Trajectory t = Run(*env);
  EXPECT_FALSE(t.failure.failed());
  EXPECT_EQ(Models().size(), 1u);
  EXPECT_EQ(t.reward, 0.0);
  EXPECT_NE(t.info.at("format_error").find("ran past its 1024 tokens"), std::string::npos);
  EXPECT_EQ(Bodies(server_, "/v1/completions")[0]["max_tokens"], 1024);
}

TEST_F(R2EnvTest, ARunawayAllocationScoresZeroAndExecutesNothing) {
  server_.Script("/v1/completions",
                 {Reply::Json(Sampled(kDecomposition, {11})),
                  Reply::Json(Sampled("Subtask 1: difficulty 1, model small\nSubtask 2: diff",
                                      {21, 22}, "length"))});
  R2EnvConfig c = Config();
  c.r2.allocator_max_tokens = 2;
  auto env = Make(c);
  ASSERT_NE(env, nullptr);
  runtime::Trajectory t = Run(*env);
  EXPECT_FALSE(t.failure.failed());
  EXPECT_EQ(Models().size(), 2u);
  EXPECT_EQ(Bodies(server_, "/v1/completions")[1]["max_tokens"], 2);
  EXPECT_EQ(t.reward, 0.0);
  EXPECT_NE(t.info.at("format_error").find("allocation: ran past its 2 tokens"), std::string::npos);
  ASSERT_EQ(t.segments.size(), 4u);
  EXPECT_TRUE(t.segments[3].trainable);
}

TEST_F(R2EnvTest, AnAllocationMissingASubtaskScoresZero) {
  server_.Script("/v1/completions",
                 {Reply::Json(Sampled(kDecomposition, {11})),
                  Reply::Json(Sampled("Subtask 1: difficulty 1, model small", {21}))});
  auto env = Make(Config());
  ASSERT_NE(env, nullptr);
  runtime::Trajectory t = Run(*env);
  EXPECT_EQ(t.reward, 0.0);
  EXPECT_NE(t.info.at("format_error").find("1 of 2 subtasks assigned"), std::string::npos);
}

TEST_F(R2EnvTest, AnExecutorReturning500FailsTheEpisodeAsAnEndpointError) {
  server_.Script("/v1/completions", {Reply::Json(Sampled(kDecomposition, {11})),
                                     Reply::Json(Sampled(kAllocation, {21})),
                                     Reply::Json(R"({"error":"boom"})", 500)});
  auto env = Make(Config());
  ASSERT_NE(env, nullptr);
  runtime::Trajectory t = Run(*env);
  EXPECT_EQ(t.failure.reason, FailureReason::kEndpointError);
  EXPECT_NE(t.failure.message.find("small"), std::string::npos);
  EXPECT_EQ(Models().size(), 3u);
}

TEST_F(R2EnvTest, APolicyEndpoint500FailsTheEpisode) {
  server_.Script("/v1/completions", {Reply::Json(R"({"error":"down"})", 500)});
  auto env = Make(Config());
  ASSERT_NE(env, nullptr);
  runtime::Trajectory t = Run(*env);
  EXPECT_EQ(t.failure.reason, FailureReason::kEndpointError);
  EXPECT_TRUE(t.rewards.empty());
}

TEST_F(R2EnvTest, TheTurnLimitEndsTheEpisode) {
  ScriptPlan();
  R2EnvConfig c = Config();
  c.r2.limits.max_turns = 3;  // decomposer, allocator, subtask 1: subtask 2 is one too many
  auto env = Make(c);
  ASSERT_NE(env, nullptr);
  runtime::Trajectory t = Run(*env);
  EXPECT_EQ(t.failure.reason, FailureReason::kFormatError);
  EXPECT_NE(t.failure.message.find("max_turns"), std::string::npos);
  EXPECT_EQ(Models().size(), 3u);
}

// Sec. 4.4 PRM: subtasks below M_thresh are checked by M_strong, which may refine them; the
// refined result is what later subtasks see.
TEST_F(R2EnvTest, TheProceduralReviewRefinesSubtasksBelowTheThreshold) {
  server_.Script(
      "/v1/completions",
      {Reply::Json(Sampled(kDecomposition, {11})), Reply::Json(Sampled(kAllocation, {21})),
       Reply::Json(Sampled("8", {31})), Reply::Json(Sampled("REFINED: 7", {32})),
       Reply::Json(Sampled("42", {41})), Reply::Json(Sampled("\\boxed{42}", {51}))});
  R2EnvConfig c = Config();
  c.r2.review.enabled = true;
  c.r2.review.strong_model = "big";
  c.r2.review.threshold_model = "big";
  auto env = Make(c);
  ASSERT_NE(env, nullptr);
  runtime::Trajectory t = Run(*env);
  EXPECT_FALSE(t.failure.failed()) << t.failure.message;
  // small's result is reviewed by big; big's own subtask is not.
  EXPECT_EQ(Models(), (std::vector<std::string>{"router-model", "router-model", "small-model",
                                                "big-model", "big-model", "big-model"}));
  auto bodies = Bodies(server_, "/v1/completions");
  const std::string review = bodies[3]["prompt"];
  EXPECT_NE(review.find("Proposed result: 8"), std::string::npos);
  EXPECT_NE(bodies[4]["prompt"].get<std::string>().find("Result: 7"), std::string::npos);
  EXPECT_EQ(t.info.at("reviewed"), "1");
  EXPECT_EQ(t.info.at("refined"), "1");
  EXPECT_EQ(t.segments[4].ids, FakeTokenize("\nResult 1: 7\n"));
  EXPECT_EQ(t.segments[4].source, "big");
  EXPECT_EQ(t.reward, 1.0);
}

TEST_F(R2EnvTest, AKeptVerdictLeavesTheResult) {
  server_.Script(
      "/v1/completions",
      {Reply::Json(Sampled(kDecomposition, {11})), Reply::Json(Sampled(kAllocation, {21})),
       Reply::Json(Sampled("7", {31})), Reply::Json(Sampled("VERDICT: CORRECT", {32})),
       Reply::Json(Sampled("42", {41})), Reply::Json(Sampled("\\boxed{42}", {51}))});
  R2EnvConfig c = Config();
  c.r2.review = {.enabled = true, .strong_model = "big", .threshold_model = "big"};
  auto env = Make(c);
  ASSERT_NE(env, nullptr);
  runtime::Trajectory t = Run(*env);
  EXPECT_EQ(t.info.at("refined"), "0");
  EXPECT_EQ(t.segments[4].source, "small");
}

TEST_F(R2EnvTest, ConfigErrorsNameTheField) {
  R2EnvConfig c = Config();
  c.r2.pool = {"small", "huge"};
  EXPECT_NE(R2Env::Create(c).status().message().find("r2.pool[1]"), std::string::npos);
  c = Config();
  c.r2.review = {.enabled = true, .strong_model = "big", .threshold_model = "router"};
  EXPECT_NE(R2Env::Create(c).status().message().find("r2.review.threshold_model"),
            std::string::npos);
  c = Config();
  c.rewards.terms = {{"hierarchy", 1.0}};
  EXPECT_FALSE(R2Env::Create(c).ok());
}

TEST_F(R2EnvTest, BuildsFromAWholeRecipe) {
  const std::string recipe = "env: {name: r2, r2: {policy_endpoint: router, prompts: {dir: " +
                             std::string(ALLOT_SOURCE_DIR) + "/configs/prompts/r2}}}\n" +
                             "trainer: {algorithm: grpo}\nendpoints:\n" +
                             "  - {name: router, base_url: " + server_.url() + ", model: r}\n" +
                             "  - {name: small, base_url: " + server_.url() + ", model: s}\n";
  auto env = R2Env::FromConfigText(recipe);
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  EXPECT_EQ((*env)->pool(), (std::vector<std::string>{"small"}));
}

// The learner's recipe keeps ${VAR} placeholders; the worker building the env resolves them
// (before, the placeholder itself reached the client as a URL and every episode failed).
TEST_F(R2EnvTest, ResolvesPlaceholdersOfTheLearnersRecipe) {
  const std::string recipe = "env: {name: r2, r2: {policy_endpoint: router, prompts: {dir: " +
                             std::string(ALLOT_SOURCE_DIR) + "/configs/prompts/r2}}}\n" +
                             "trainer: {algorithm: grpo}\nendpoints:\n" +
                             "  - {name: router, base_url: " + server_.url() + ", model: r}\n" +
                             "  - {name: small, base_url: \"${ALLOT_TEST_R2_UNSET_URL:-" +
                             server_.url() + "}\", model: s}\n";
  auto env = R2Env::FromConfigText(recipe);
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  ASSERT_NE((*env)->client().endpoint("small"), nullptr);
  EXPECT_EQ((*env)->client().endpoint("small")->base_url.rfind(server_.url(), 0), 0u);
}

TEST(SubtaskPlanTest, ParsesNumberedSubtasksInSeveralForms) {
  auto a = ParseSubtasks("Plan:\nSubtask 1: add\n  the numbers\nSubtask 2: double", 12);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(*a, (std::vector<std::string>{"add the numbers", "double"}));
  auto b = ParseSubtasks("1. add\n2) double\n### Subtask3: halve", 12);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->size(), 3u);
  EXPECT_EQ(FormatSubtasks(*a), "Subtask 1: add the numbers\nSubtask 2: double\n");
}

TEST(SubtaskPlanTest, RejectsGapsEmptiesAndTooMany) {
  EXPECT_NE(ParseSubtasks("Subtask 1: a\nSubtask 3: c", 12).status().message().find("subtask 3"),
            std::string::npos);
  EXPECT_FALSE(ParseSubtasks("Subtask 1:\n", 12).ok());
  EXPECT_FALSE(ParseSubtasks("1. a\n2. b\n3. c", 2).ok());
  EXPECT_FALSE(ParseSubtasks("", 2).ok());
}

TEST(SubtaskPlanTest, ParsesAndChecksAllocations) {
  const std::vector<std::string> pool = {"qwen2.5-0.5b", "gpt-4o"};
  auto a = ParseAllocation(
      "Subtask 1: difficulty 2, model Qwen2.5-0.5B\n"
      "Subtask 2: difficulty=5, model=gpt-4o.",
      2, pool, 1, 5);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ((*a)[0].model, "qwen2.5-0.5b");
  EXPECT_EQ((*a)[1].difficulty, 5);
  EXPECT_EQ(FormatAllocation(*a),
            "Subtask 1: difficulty 2, model qwen2.5-0.5b\nSubtask 2: difficulty 5, model gpt-4o\n");
  EXPECT_FALSE(ParseAllocation("Subtask 1: difficulty 2, model gpt-4o", 2, pool, 1, 5).ok());
  EXPECT_FALSE(ParseAllocation("Subtask 1: difficulty 9, model gpt-4o", 1, pool, 1, 5).ok());
  EXPECT_FALSE(ParseAllocation("Subtask 1: model gpt-4o", 1, pool, 1, 5).ok());
  EXPECT_FALSE(ParseAllocation("Subtask 1: difficulty 1, model gpt-4o\nSubtask 2: difficulty 1, "
                               "model gpt-4o",
                               1, pool, 1, 5)
                   .ok());
}

// R2's parser read answer_format "text" as text grading while CogER's and DeepTool's read it as
// the env's own format; the grpo engine sends "text" for every dataset that names no format, so
// R2 trained against text grading and evaluated (its eval left "text" out) against boxed.
TEST(R2ItemTest, TextIsTheEnvsFormatAndTheOtherNamesAreAccepted) {
  auto item = ParseR2Item(R"({"question": "Q", "answer": "4", "answer_format": "text"})",
                          rewards::AnswerFormat::kBoxed);
  ASSERT_TRUE(item.ok()) << item.status().ToString();
  EXPECT_EQ(item->format, rewards::AnswerFormat::kBoxed);
  item = ParseR2Item(R"({"prompt": "Q", "reference": "4", "format": "number"})",
                     rewards::AnswerFormat::kBoxed);
  ASSERT_TRUE(item.ok()) << item.status().ToString();
  EXPECT_EQ(item->question, "Q");
  EXPECT_EQ(item->reference, "4");
  EXPECT_EQ(item->format, rewards::AnswerFormat::kNumber);
}

}  // namespace
}  // namespace allot::envs::r2
