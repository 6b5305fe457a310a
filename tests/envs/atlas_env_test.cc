// The ATLAS env against scripted endpoints: the exact call sequence (orchestrator turns and the
// independent solvers its explore calls run), segments and masks of the Thought / Action /
// Observation trace, the accuracy reward, the explore budget (8, 20 multi-model), effort,
// solver choice, the integrator ablation, and the failure paths.
#include <gtest/gtest.h>

#include "envs/atlas/atlas_env.h"
#include "envs/atlas/atlas_eval.h"
#include "envs/atlas/explore_action.h"
#include "envs/atlas/solver_report.h"
#include "llm/client.h"
#include "tests/envs/runtime_test_util.h"

namespace allot::envs::atlas {
namespace {

using llm::testing::Reply;
using llm::testing::ScriptedServer;
using runtime::FailureReason;
using runtime::SegmentRole;
using testing::Bodies;
using testing::FakeTokenize;
using testing::Sampled;

constexpr const char* kItem = R"({"question": "What is 2+3?", "answer": "5", "format": "number"})";

// An orchestrator turn that stopped at "Observation:" (the stop string is part of the ids).
Reply Turn(const std::string& text, std::vector<int64_t> ids = {5, 6}) {
  return Reply::Json(Sampled(text, ids, "stop", "Observation:"));
}
Reply Solver(const std::string& answer, const std::string& approach = "algebra") {
  return Reply::Json(Sampled(
      "Approach: " + approach + "\nReasoning: 2 + 3 = 5\nAnswer: " + answer + "\nConfidence: 90",
      {9}));
}

class AtlasEnvTest : public ::testing::Test {
 protected:
  void SetUp() override { testing::ServeFakeTokenizer(server_); }

  AtlasEnvConfig Config() {
    AtlasEnvConfig c;
    c.endpoints = {testing::ScriptedEndpoint(server_, "orchestrator"),
                   testing::ScriptedEndpoint(server_, "solver")};
    c.atlas.prompts.dir = std::string(ALLOT_SOURCE_DIR) + "/configs/prompts/atlas";
    return c;
  }

  std::unique_ptr<AtlasEnv> Make(AtlasEnvConfig c) {
    auto env = AtlasEnv::Create(std::move(c));
    EXPECT_TRUE(env.ok()) << env.status().ToString();
    return env.ok() ? std::move(env).value() : nullptr;
  }

  runtime::Trajectory Run(AtlasEnv& env, const std::string& item = kItem) {
    runtime::EpisodeInput in;
    in.dataset_item = item;
    auto t = env.Run(in);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return t.ok() ? std::move(t).value() : runtime::Trajectory{};
  }

  // The model of each /v1/completions request, in order.
  std::vector<std::string> Models() {
    std::vector<std::string> out;
    for (const auto& b : Bodies(server_, "/v1/completions")) out.push_back(b["model"]);
    return out;
  }

  ScriptedServer server_;
};

double Reward(const runtime::Trajectory& t, const std::string& name) {
  for (const auto& [n, v] : t.rewards) {
    if (n == name) return v;
  }
  ADD_FAILURE() << "no reward " << name;
  return -1;
}

TEST_F(AtlasEnvTest, ExploresIndependentSolversThenAnswersItself) {
  server_.Script(
      "/v1/completions",
      {Turn("Thought: no evidence yet.\nAction: explore {\"strategy\": \"algebra\"}\n"
            "Observation:"),
       Solver("5"),
       Turn("Thought: one candidate is weak evidence.\nAction: explore "
            "{\"effort\": \"high\", \"strategy\": \"counting\"}\nObservation:",
            {7}),
       Solver("5", "counting"), Turn("Thought: two methods agree.\nFinal Answer: 5", {8})});
  auto env = Make(Config());
  ASSERT_NE(env, nullptr);
  runtime::Trajectory t = Run(*env);
  ASSERT_FALSE(t.failure.failed()) << t.failure.message;
  EXPECT_EQ(Models(),
            (std::vector<std::string>{"orchestrator-model", "solver-model", "orchestrator-model",
                                      "solver-model", "orchestrator-model"}));
  const auto bodies = Bodies(server_, "/v1/completions");
  // Effort sets the solver's budget: medium by default, high when asked.
  EXPECT_EQ(bodies[1]["max_tokens"], 4096);
  EXPECT_EQ(bodies[3]["max_tokens"], 16384);
  // Each solver sees the original problem and its strategy, never an earlier candidate.
  const std::string second = bodies[3]["prompt"];
  EXPECT_NE(second.find("What is 2+3?"), std::string::npos);
  EXPECT_NE(second.find("counting"), std::string::npos);
  EXPECT_EQ(second.find("Candidate"), std::string::npos);
  EXPECT_EQ(second.find("2 + 3 = 5"), std::string::npos);
  // The orchestrator stops at "Observation:" and samples with log-probs.
  EXPECT_EQ(bodies[0]["stop"], nlohmann::json::array({"Observation:"}));
  EXPECT_EQ(bodies[0]["logprobs"], 1);

  // The trace: prompt, then per turn the orchestrator's output (trainable) and the
  // observation (masked, another model's output), ending with the final turn.
  ASSERT_EQ(t.segments.size(), 6u);
  const SegmentRole roles[] = {SegmentRole::kPrompt,     SegmentRole::kPolicy,
                               SegmentRole::kOtherModel, SegmentRole::kPolicy,
                               SegmentRole::kOtherModel, SegmentRole::kPolicy};
  const uint32_t steps[] = {0, 1, 1, 2, 2, 3};
  for (size_t i = 0; i < t.segments.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(t.segments[i].role, roles[i]);
    EXPECT_EQ(t.segments[i].trainable, roles[i] == SegmentRole::kPolicy);
    EXPECT_EQ(t.segments[i].step, steps[i]);
    EXPECT_EQ(t.segments[i].logprobs.size(),
              roles[i] == SegmentRole::kPolicy ? t.segments[i].ids.size() : 0u);
  }
  EXPECT_EQ(t.segments[1].ids, (std::vector<int64_t>{5, 6}));
  EXPECT_EQ(t.segments[2].source, "solver");
  const std::string observation =
      " Candidate 1 (solver solver, effort medium, strategy: algebra)\nApproach: algebra\n"
      "Answer: 5\nConfidence: 90\nReasoning: 2 + 3 = 5\n";
  EXPECT_EQ(t.segments[2].ids, FakeTokenize(observation));
  // Turn 3's prompt is every id so far, never re-tokenized.
  std::vector<int64_t> so_far;
  for (size_t i = 0; i < 5; ++i) {
    so_far.insert(so_far.end(), t.segments[i].ids.begin(), t.segments[i].ids.end());
  }
  EXPECT_EQ(bodies[4]["prompt"].get<std::vector<int64_t>>(), so_far);

  EXPECT_DOUBLE_EQ(Reward(t, "accuracy"), 1.0);
  EXPECT_DOUBLE_EQ(t.reward, 1.0);
  EXPECT_EQ(t.tool_calls, 2u);
  EXPECT_EQ(t.info["explore_calls"], "2");
  EXPECT_EQ(t.info["efforts"], "medium,high");
  EXPECT_EQ(t.info["stopped"], "final_answer");
  EXPECT_EQ(t.info["final_answer"], "5");
  EXPECT_EQ(t.usage.by_endpoint.at("orchestrator").calls, 3);
  EXPECT_EQ(t.usage.by_endpoint.at("solver").calls, 2);
  EXPECT_GT(t.usage.by_endpoint.at("solver").cost_usd, 0.0);
}

TEST_F(AtlasEnvTest, TheBudgetIsTheVariantsAndExploringPastItEndsWithoutAnAnswer) {
  AtlasSection s;
  EXPECT_EQ(s.ExploreBudget(), 8);
  s.variant = "multi_model";
  EXPECT_EQ(s.ExploreBudget(), 20);
  s.max_explore_calls = 3;
  EXPECT_EQ(s.ExploreBudget(), 3);

  AtlasEnvConfig c = Config();
  c.atlas.max_explore_calls = 2;
  const Reply explore = Turn("Thought: more.\nAction: explore\nObservation:");
  server_.Script("/v1/completions", {explore, Solver("5"), explore, Solver("6"), explore,
                                     Turn("Thought: told to stop.\nFinal Answer: 5")});
  auto env = Make(c);
  ASSERT_NE(env, nullptr);
  runtime::Trajectory t = Run(*env);
  ASSERT_FALSE(t.failure.failed()) << t.failure.message;
  EXPECT_EQ(t.tool_calls, 2u);
  EXPECT_EQ(server_.request_count("/v1/completions"), 6);  // no third solver call
  const runtime::Segment& warning = t.segments[t.segments.size() - 2];
  EXPECT_EQ(warning.role, SegmentRole::kEnv);
  EXPECT_FALSE(warning.trainable);
  EXPECT_DOUBLE_EQ(Reward(t, "accuracy"), 1.0);

  // Exploring again after the warning ends the episode with no answer (accuracy 0).
  server_.Script("/v1/completions", {explore, Solver("5"), explore, Solver("5"), explore, explore});
  runtime::Trajectory again = Run(*env);
  ASSERT_FALSE(again.failure.failed()) << again.failure.message;
  EXPECT_EQ(again.info["stopped"], "budget");
  EXPECT_DOUBLE_EQ(Reward(again, "accuracy"), 0.0);
}

TEST_F(AtlasEnvTest, TheMultiModelVariantNamesSolversWithPricesAndEscalates) {
  AtlasEnvConfig c = Config();
  llm::EndpointConfig small = testing::ScriptedEndpoint(server_, "small");
  llm::EndpointConfig large = testing::ScriptedEndpoint(server_, "large");
  small.usd_per_m_input = 0.1;
  large.usd_per_m_input = 3.0;
  c.endpoints = {testing::ScriptedEndpoint(server_, "orchestrator"), small, large};
  c.atlas.solvers = {"small", "large"};
  AtlasEnvConfig single = c;
  EXPECT_FALSE(AtlasEnv::Create(single).ok());  // one solver model unless multi_model
  c.atlas.variant = "multi_model";
  server_.Script(
      "/v1/completions",
      {Turn("Thought: cheap first.\nAction: explore\nObservation:"), Solver("4"),
       Turn("Thought: escalate.\nAction: explore {\"solver\": \"large\"}\nObservation:"),
       Solver("5"), Turn("Thought: try one more.\nAction: explore {\"solver\": \"huge\"}\n"),
       Turn("Thought: the strong model agrees with the problem.\nFinal Answer: 5")});
  auto env = Make(c);
  ASSERT_NE(env, nullptr);
  runtime::Trajectory t = Run(*env);
  ASSERT_FALSE(t.failure.failed()) << t.failure.message;
  EXPECT_EQ(Models(),
            (std::vector<std::string>{"orchestrator-model", "small-model", "orchestrator-model",
                                      "large-model", "orchestrator-model", "orchestrator-model"}));
  const std::string prompt = Bodies(server_, "/tokenize")[0]["prompt"];
  EXPECT_NE(prompt.find("- small: $0.10 per 1M input tokens"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("- large: $3.00 per 1M input tokens"), std::string::npos);
  EXPECT_NE(prompt.find("at most 20 times"), std::string::npos);
  EXPECT_EQ(t.info["solvers"], "small,large");
  EXPECT_EQ(t.tool_calls, 2u);  // the unknown solver costs no explore call
  EXPECT_EQ(t.info["malformed_turns"], "1");
  EXPECT_EQ(t.usage.by_endpoint.at("large").calls, 1);
}

TEST_F(AtlasEnvTest, TheIntegratorAblationSynthesizesThePoolInASeparateStep) {
  AtlasEnvConfig c = Config();
  c.atlas.finalize = "integrator";
  server_.Script("/v1/completions", {Turn("Thought: go.\nAction: explore\nObservation:"),
                                     Solver("5"), Turn("Thought: done.\nFinal Answer: 7"),
                                     Reply::Json(Sampled("Final Answer: 5", {3}))});
  auto env = Make(c);
  ASSERT_NE(env, nullptr);
  runtime::Trajectory t = Run(*env);
  ASSERT_FALSE(t.failure.failed()) << t.failure.message;
  const auto bodies = Bodies(server_, "/v1/completions");
  ASSERT_EQ(bodies.size(), 4u);
  const std::string integrator = bodies[3]["prompt"];
  EXPECT_NE(integrator.find("Candidate 1"), std::string::npos);
  EXPECT_NE(integrator.find("Answer: 5"), std::string::npos);
  EXPECT_EQ(integrator.find("Thought"), std::string::npos);  // the pool, not the trace
  EXPECT_EQ(t.info["orchestrator_answer"], "7");
  EXPECT_EQ(t.info["final_answer"], "5");
  EXPECT_DOUBLE_EQ(Reward(t, "accuracy"), 1.0);
}

TEST_F(AtlasEnvTest, ASolverFailureIsEvidenceNotTheEpisodesEnd) {
  server_.Script("/v1/completions",
                 {Turn("Thought: go.\nAction: explore {\"effort\": \"low\"}\nObservation:"),
                  Reply::Json(R"({"error":{"message":"overloaded"}})", 500),
                  Turn("Thought: go.\nAction: explore {\"effort\": \"low\"}\nObservation:"),
                  Reply::Json(Sampled("Approach: long\nReasoning: and on", {4}, "length")),
                  Turn("Thought: solvers fail; give up.\nFinal Answer:")});
  auto env = Make(Config());
  ASSERT_NE(env, nullptr);
  runtime::Trajectory t = Run(*env);
  ASSERT_FALSE(t.failure.failed()) << t.failure.message;
  EXPECT_EQ(t.tool_calls, 2u);
  EXPECT_EQ(t.info["final_answer"], "");
  EXPECT_DOUBLE_EQ(Reward(t, "accuracy"), 0.0);
  EXPECT_EQ(t.usage.by_endpoint.at("solver").failed_calls, 1);
  const auto tokenized = Bodies(server_, "/tokenize");
  const std::string first = tokenized[1]["prompt"], second = tokenized[2]["prompt"];
  EXPECT_NE(first.find("The solver failed"), std::string::npos) << first;
  EXPECT_NE(second.find("cut off at its 1024-token budget (effort low)"), std::string::npos);
}

TEST_F(AtlasEnvTest, OrchestratorFailuresEndTheEpisodeWithTheirReason) {
  auto env = Make(Config());
  ASSERT_NE(env, nullptr);
  // Endpoint error.
  server_.Script("/v1/completions", {Reply::Json(R"({"error":{"message":"down"}})", 500)});
  EXPECT_EQ(Run(*env).failure.reason, FailureReason::kEndpointError);
  // Malformed turns: each is told what is wrong; past max_malformed_turns (2), a format error.
  server_.Script("/v1/completions", {Turn("I think it is 5."), Turn("Action: search"),
                                     Turn("Action: explore {\"effort\": \"extreme\"}")});
  runtime::Trajectory m = Run(*env);
  EXPECT_EQ(m.failure.reason, FailureReason::kFormatError);
  EXPECT_NE(m.failure.message.find("effort must be low, medium or high"), std::string::npos)
      << m.failure.message;
  EXPECT_EQ(m.tool_calls, 0u);
  int env_notes = 0;
  for (const auto& s : m.segments) env_notes += s.role == SegmentRole::kEnv ? 1 : 0;
  EXPECT_EQ(env_notes, 2);
  // Runaway output: a turn cut at its budget without an action.
  server_.Script("/v1/completions",
                 {Reply::Json(Sampled("Thought: and so on and so on", {1, 2}, "length"))});
  runtime::Trajectory r = Run(*env);
  EXPECT_EQ(r.failure.reason, FailureReason::kFormatError);
  EXPECT_NE(r.failure.message.find("runaway"), std::string::npos);
  // A bad dataset item.
  EXPECT_EQ(Run(*env, R"({"answer": "5"})").failure.reason, FailureReason::kEnvError);
}

// The orchestrator's own failures are scored (failure_reward, accuracy 0) and keep their
// trainable turns, so that the GRPO learner keeps them in their group (a scored policy failure,
// rollout/failure_kind.h); an endpoint failure carries no reward and is dropped. (They used to
// carry no reward at all, and the learner dropped them from their group.)
TEST_F(AtlasEnvTest, OrchestratorFailuresAreScoredEndpointFailuresAreNot) {
  AtlasEnvConfig c = Config();
  c.atlas.failure_reward = -0.5;
  auto env = Make(c);
  ASSERT_NE(env, nullptr);
  auto trainable = [](const runtime::Trajectory& t) {
    size_t n = 0;
    for (const auto& s : t.segments) n += s.trainable ? s.ids.size() : 0;
    return n;
  };
  server_.Script("/v1/completions", {Turn("I think it is 5."), Turn("Action: search"),
                                     Turn("Action: explore {\"effort\": \"extreme\"}")});
  runtime::Trajectory m = Run(*env);
  EXPECT_EQ(m.failure.reason, FailureReason::kFormatError);
  EXPECT_EQ(Reward(m, "accuracy"), 0.0);
  EXPECT_EQ(m.reward, -0.5);
  EXPECT_EQ(trainable(m), 6u);  // three turns of two ids
  server_.Script("/v1/completions",
                 {Reply::Json(Sampled("Thought: and so on and so on", {1, 2}, "length"))});
  runtime::Trajectory r = Run(*env);
  EXPECT_EQ(r.failure.reason, FailureReason::kFormatError);
  EXPECT_EQ(Reward(r, "accuracy"), 0.0);
  EXPECT_EQ(r.reward, -0.5);
  EXPECT_EQ(trainable(r), 2u);
  server_.Script("/v1/completions", {Reply::Json(R"({"error":{"message":"down"}})", 500)});
  runtime::Trajectory down = Run(*env);
  EXPECT_EQ(down.failure.reason, FailureReason::kEndpointError);
  EXPECT_TRUE(down.rewards.empty());
  EXPECT_EQ(down.reward, 0.0);
}

TEST_F(AtlasEnvTest, ConfigErrorsNameTheField) {
  AtlasEnvConfig c = Config();
  c.atlas.solvers = {"nope"};
  auto bad = AtlasEnv::Create(c);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("atlas.solvers"), std::string::npos);
  c = Config();
  c.atlas.prompts.dir = "missing";
  auto missing = AtlasEnv::Create(c);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("atlas.prompts.orchestrator"), std::string::npos);
  c = Config();
  c.atlas.prompts.solver = "Solve {{question}} with {{nonsense}}";
  EXPECT_FALSE(AtlasEnv::Create(c).ok());
}

TEST(AtlasParseTest, OrchestratorTurns) {
  OrchestratorTurn e = ParseOrchestratorTurn(
      "Thought: need more.\nAction: explore {\"solver\": \"a\", \"strategy\": \"guess\"}\n");
  ASSERT_EQ(e.kind, OrchestratorTurn::Kind::kExplore);
  EXPECT_EQ(e.thought, "need more.");
  EXPECT_EQ(e.explore.solver, "a");
  EXPECT_EQ(e.explore.strategy, "guess");
  EXPECT_FALSE(e.explore.effort.has_value());
  EXPECT_EQ(ParseOrchestratorTurn("Action: explore()").kind, OrchestratorTurn::Kind::kExplore);
  OrchestratorTurn f = ParseOrchestratorTurn("Thought: ok\nFinal Answer: 42\nAction: explore");
  ASSERT_EQ(f.kind, OrchestratorTurn::Kind::kFinal);
  EXPECT_EQ(f.final_answer, "42");
  EXPECT_EQ(ParseOrchestratorTurn("Action: explore {\"budget\": \"9\"}").kind,
            OrchestratorTurn::Kind::kMalformed);
  EXPECT_EQ(ParseOrchestratorTurn("Action: explore {\"effort\": 3}").kind,
            OrchestratorTurn::Kind::kMalformed);
  EXPECT_EQ(ParseOrchestratorTurn("Action: explore {oops").kind,
            OrchestratorTurn::Kind::kMalformed);
  EXPECT_EQ(ParseOrchestratorTurn("The answer is 4").kind, OrchestratorTurn::Kind::kMalformed);
}

TEST(AtlasParseTest, SolverReplies) {
  SolverReport r = ParseSolverReply(
      "Let me see.\nApproach: substitution\nReasoning: x = 2\nso y = 3\nAnswer: 3\n"
      "Confidence: 0.75");
  EXPECT_EQ(r.approach, "substitution");
  EXPECT_EQ(r.reasoning, "x = 2\nso y = 3");
  EXPECT_EQ(r.answer, "3");
  EXPECT_EQ(r.confidence, 75);
  SolverReport bare = ParseSolverReply("work work\nAnswer: 9");
  EXPECT_EQ(bare.reasoning, "work work");
  EXPECT_EQ(bare.confidence, -1);
  EXPECT_EQ(ParseSolverReply("no answer here").answer, "");
  EXPECT_EQ(ParseSolverReply("Answer: 1\nConfidence: 80%").confidence, 80);
  r.index = 2;
  r.solver = "s";
  r.effort = "low";
  EXPECT_EQ(RenderObservation(r, 5),
            "Candidate 2 (solver s, effort low)\nApproach: substitution\nAnswer: 3\n"
            "Confidence: 75\nReasoning: x = 2 [...]\n");
}

TEST_F(AtlasEnvTest, EvalReportsAccuracyCallsAndCost) {
  server_.Script("/v1/completions",
                 {Turn("Thought: go.\nAction: explore\nObservation:"), Solver("5"),
                  Turn("Thought: ok.\nFinal Answer: 5"), Turn("Thought: sure.\nFinal Answer: 3")});
  auto env = Make(Config());
  ASSERT_NE(env, nullptr);
  datasets::Example a, b;
  a.id = "a";
  a.question = "What is 2+3?";
  a.answer = "5";
  b = a;
  b.id = "b";
  auto r = EvaluateAtlas(*env, {a, b}, 1);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->problems, 2);
  EXPECT_EQ(r->correct, 1);
  EXPECT_EQ(r->explore_calls, 1);
  EXPECT_EQ(r->calls_histogram, (std::map<int64_t, int64_t>{{0, 1}, {1, 1}}));
  EXPECT_EQ(r->budget, 8);
  EXPECT_EQ(r->usage.total.calls, 4);
  EXPECT_NE(r->ToJson().find("\"mean_explore_calls\": 0.5"), std::string::npos) << r->ToJson();
  // Each problem's outcome, in order: a explored once and answered 5; b answered 3 at once.
  ASSERT_EQ(r->items.size(), 2u);
  EXPECT_EQ(r->items[0].id, "a");
  EXPECT_TRUE(r->items[0].correct);
  EXPECT_EQ(r->items[0].explore_calls, 1);
  EXPECT_EQ(r->items[0].stopped, "final_answer");
  EXPECT_EQ(r->items[1].id, "b");
  EXPECT_FALSE(r->items[1].correct);
  EXPECT_EQ(r->items[1].explore_calls, 0);
  const auto j = nlohmann::json::parse(r->ToJson());
  ASSERT_EQ(j["items"].size(), 2u);
  EXPECT_EQ(j["items"][1]["id"], "b");
  EXPECT_EQ(j["items"][1]["correct"], false);
}

// ATLAS's parser let an item without an answer through, graded against "".
TEST_F(AtlasEnvTest, AnItemWithoutAnAnswerFailsNamingTheField) {
  auto env = Make(Config());
  ASSERT_NE(env, nullptr);
  runtime::Trajectory t = Run(*env, R"({"question": "What is 2+3?", "source": "a.jsonl:3"})");
  EXPECT_EQ(t.failure.reason, runtime::FailureReason::kEnvError);
  EXPECT_NE(t.failure.message.find("a.jsonl:3: field 'answer'"), std::string::npos)
      << t.failure.message;
  EXPECT_TRUE(Models().empty());
}

}  // namespace
}  // namespace allot::envs::atlas
