// The RLoT env (envs/rlot/rlot_env.h) against a scripted OpenAI-compatible endpoint: the exact
// sequence of LLM calls per block, parsed states, the step limit, Refine-first, rewards, and
// the failure paths (endpoint 500, malformed self-evaluation, runaway output).
#include "envs/rlot/rlot_env.h"
#include "envs/rlot/rlot_eval.h"
#include "envs/rlot/rlot_recipe.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/config/binder.h"
#include "llm/client.h"
#include "tests/llm/scripted_server.h"

namespace allot::envs::rlot {
namespace {

using llm::testing::CompletionBody;
using llm::testing::Reply;
using llm::testing::ScriptedServer;
using nlohmann::json;

// Which template a prompt was rendered from (a phrase only that template holds).
std::string Kind(const std::string& prompt) {
  const std::pair<const char*, const char*> kinds[] = {
      {"Do not give the final answer yet", "reason"},
      {"Break the remaining work", "decompose_list"},
      {"Solve only this subtask", "decompose_solve"},
      {"Summarize what these results", "decompose_summarize"},
      {"different plans for how to continue", "debate_plans"},
      {"Compare the plans", "debate_compare"},
      {"Follow this plan", "debate_execute"},
      {"Rewrite the latest step", "refine"},
      {"Give the final answer now", "terminate"},
      {"already reach the final answer", "finish"},
      {"Score each aspect", "eval"},
      {"think step by step", "cot"},
  };
  for (const auto& [phrase, kind] : kinds) {
    if (prompt.find(phrase) != std::string::npos) return kind;
  }
  return "unknown";
}

// Records every completion call and replies per kind; `fault` can override any reply.
class ScriptedLlm {
 public:
  ScriptedLlm() {
    replies_ = {
        {"reason", "2 + 3 = 5"},
        {"decompose_list", "### Subtask1: add the numbers\n### Subtask2: double the sum"},
        {"decompose_solve", "sub-result"},
        {"decompose_summarize", "The sum doubled is 10."},
        {"debate_plans", "### Plan1: count up\n### Plan2: multiply\n### Plan3: guess"},
        {"debate_compare", "The most promising plan is Plan[2]: it is shortest."},
        {"debate_execute", "Multiply: 5 * 2 = 10"},
        {"refine", "Refined: 5 * 2 = 10"},
        {"terminate", "The result is \\boxed{10}."},
        {"cot", "2 + 3 = 5, and 5 * 2 = 10. The result is \\boxed{10}."},
        {"finish", "No"},
        {"eval",
         "A1 score=[3] reason=[ok]\nA2 score=[2] reason=[ok]\nA3 score=[3]\nB1 score=[1]\n"
         "B2 score=[0]\nC1 score=[2]\nC2 score=[1]"},
    };
    server_.SetHandler([this](const llm::testing::ServerRequest& req) {
      if (req.path != "/v1/completions") return Reply::Json(R"({"error":"no route"})", 404);
      const json body = json::parse(req.body, nullptr, false);
      const std::string prompt = body.value("prompt", std::string());
      const std::string kind = Kind(prompt);
      std::lock_guard<std::mutex> lock(mu_);
      calls_.push_back(kind);
      prompts_.push_back(prompt);
      const int n = ++count_[kind];
      if (fault_ && fault_(kind, n).has_value()) return *fault_(kind, n);
      return Reply::Json(CompletionBody(replies_[kind], {}, 10));
    });
  }

  std::vector<std::string> calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }
  std::string prompt(size_t i) {
    std::lock_guard<std::mutex> lock(mu_);
    return prompts_.at(i);
  }
  void Set(const std::string& kind, const std::string& reply) { replies_[kind] = reply; }
  // (kind, n-th call of that kind) -> a reply that replaces the scripted one.
  void Fault(std::function<std::optional<Reply>(const std::string&, int)> f) { fault_ = f; }

  std::shared_ptr<llm::Client> Client() {
    llm::EndpointConfig e;
    e.name = "policy";
    e.base_url = server_.url();
    e.model = "scripted";
    e.limits.max_attempts = 1;  // a 500 fails at once
    auto c = llm::Client::Create({e});
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return std::shared_ptr<llm::Client>(std::move(c).value());
  }

 private:
  ScriptedServer server_;
  std::mutex mu_;
  std::map<std::string, std::string> replies_;
  std::vector<std::string> calls_, prompts_;
  std::map<std::string, int> count_;
  std::function<std::optional<Reply>(const std::string&, int)> fault_;
};

// A step scorer that returns 0.1 x (steps in the chain) for the last step and records chains.
class CountingScorer : public rewards::StepScorer {
 public:
  Result<std::vector<double>> StepScores(const std::string&,
                                         const std::vector<std::string>& steps) const override {
    std::lock_guard<std::mutex> lock(mu_);
    chains.push_back(steps);
    if (fail) return Unavailable("prm down");
    return std::vector<double>(steps.size(), 0.1 * static_cast<double>(steps.size()));
  }
  mutable std::mutex mu_;
  mutable std::vector<std::vector<std::string>> chains;
  bool fail = false;
};

RlotEnvConfig Config() {
  RlotEnvConfig c;
  c.prompts_dir = std::string(ALLOT_SOURCE_DIR) + "/configs/prompts/rlot";
  return c;
}

runtime::EpisodeInput Input(const std::string& answer = "10") {
  runtime::EpisodeInput in;
  in.episode_id = "e1";
  in.dataset_item = json{{"question", "What is (2+3)*2?"}, {"answer", answer}}.dump();
  return in;
}

BlockChooser Sequence(std::vector<int> actions) {
  return [actions](const State&, int decision) {
    return actions.at(static_cast<size_t>(decision - 1));
  };
}

struct Fixture {
  ScriptedLlm llm;
  std::shared_ptr<CountingScorer> scorer = std::make_shared<CountingScorer>();
  std::unique_ptr<RlotEnv> env;
  explicit Fixture(RlotEnvConfig c = Config()) {
    auto e = RlotEnv::Create(std::move(c), llm.Client(), scorer);
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    env = std::move(e).value();
  }
};

const State kEvalState = {3, 2, 3, 1, 0, 2, 1};

TEST(RlotEnvTest, EveryBlockMakesItsCallsInOrder) {
  Fixture f;
  // Refine first (becomes Reason), Decompose, Debate, Refine, Terminate.
  auto t = f.env->RunWith(Input(), Sequence({3, 1, 2, 3, 4}));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_FALSE(t->failure.failed()) << t->failure.message;
  const std::vector<std::string> expected = {
      "reason",         "finish",
      "eval",  // Refine -> Reason
      "decompose_list", "decompose_solve", "decompose_solve", "decompose_summarize",
      "finish",
      "eval",  //
      "debate_plans",   "debate_compare",  "debate_execute",  "finish",
      "eval",  //
      "refine",         "finish",
      "eval",  //
      "terminate"};
  EXPECT_EQ(f.llm.calls(), expected);
  EXPECT_EQ(t->info.at("blocks"), "reason-decompose-debate-refine-terminate");
  EXPECT_EQ(t->info.at("chosen"), "refine-decompose-debate-refine-terminate");
  EXPECT_EQ(t->info.at("pattern"), "Reason-Decompose-Debate-Refine");
  EXPECT_EQ(t->info.at("debate_plans"), "2");
  EXPECT_EQ(t->info.at("answer"), "10");

  // Decompose: the second subtask sees the first one's result; only the summary joins.
  EXPECT_NE(f.llm.prompt(5).find("Result: sub-result"), std::string::npos);
  EXPECT_EQ(f.llm.prompt(4).find("Result: sub-result"), std::string::npos);
  // Debate: executes along the chosen plan 2.
  EXPECT_NE(f.llm.prompt(11).find("Follow this plan: multiply"), std::string::npos);
  // The chains the scorer saw: Refine rewrote step 3 in place.
  ASSERT_EQ(f.scorer->chains.size(), 4u);
  EXPECT_EQ(f.scorer->chains[0], (std::vector<std::string>{"2 + 3 = 5"}));
  EXPECT_EQ(f.scorer->chains[1], (std::vector<std::string>{"2 + 3 = 5", "The sum doubled is 10."}));
  EXPECT_EQ(f.scorer->chains[3], (std::vector<std::string>{"2 + 3 = 5", "The sum doubled is 10.",
                                                           "Refined: 5 * 2 = 10"}));
  const std::string answer_prompt = f.llm.prompt(17);
  EXPECT_NE(answer_prompt.find("Step 3: Refined: 5 * 2 = 10"), std::string::npos);
  EXPECT_EQ(answer_prompt.find("Multiply: 5 * 2 = 10"), std::string::npos);
  EXPECT_NE(answer_prompt.find("\\boxed{}"), std::string::npos);

  // Transitions: chosen actions, PRM rewards of the chain so far, outcome at the end.
  ASSERT_EQ(t->transitions.size(), 5u);
  const std::vector<uint32_t> actions = {3, 1, 2, 3, 4};
  const std::vector<float> rewards = {0.1f, 0.2f, 0.3f, 0.3f, 1.0f};
  for (size_t i = 0; i < 5; ++i) {
    const auto& tr = t->transitions[i];
    EXPECT_EQ(tr.action, actions[i]) << i;
    EXPECT_FLOAT_EQ(tr.reward, rewards[i]) << i;
    EXPECT_EQ(tr.done, i == 4) << i;
    EXPECT_EQ(tr.num_actions, 5u);
    EXPECT_EQ(tr.state.size(), 7u);
  }
  EXPECT_EQ(t->transitions[0].state, std::vector<float>(7, 0.0f));  // nothing evaluated yet
  EXPECT_EQ(t->transitions[0].next_state, std::vector<float>(kEvalState.begin(), kEvalState.end()));
  EXPECT_EQ(t->transitions[1].state, t->transitions[0].next_state);
  ASSERT_EQ(t->step_rewards.size(), 5u);
  for (size_t i = 0; i < 5; ++i) EXPECT_NEAR(t->step_rewards[i], rewards[i], 1e-6) << i;
  ASSERT_EQ(t->rewards.size(), 2u);
  EXPECT_EQ(t->rewards[0].first, "outcome");
  EXPECT_DOUBLE_EQ(t->rewards[0].second, 1.0);
  EXPECT_EQ(t->rewards[1].first, "prm");
  EXPECT_NEAR(t->rewards[1].second, 0.9, 1e-12);
  EXPECT_NEAR(t->reward, 1.9, 1e-12);
  // Accounting: 18 calls to the policy endpoint.
  EXPECT_EQ(t->usage.total.calls, 18);
}

TEST(RlotEnvTest, TerminateIsForcedOnTheSixthDecision) {
  Fixture f;
  int decisions = 0;
  auto t = f.env->RunWith(Input(), [&](const State&, int d) {
    decisions = d;
    return 0;  // always Reason
  });
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE(t->failure.failed()) << t->failure.message;
  EXPECT_EQ(decisions, 6);
  ASSERT_EQ(t->transitions.size(), 6u);
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(t->transitions[i].action, 0u) << i;  // as chosen
  EXPECT_TRUE(t->transitions[5].done);
  EXPECT_EQ(t->info.at("blocks"), "reason-reason-reason-reason-reason-terminate");
  EXPECT_EQ(t->info.at("steps"), "5");
  EXPECT_EQ(f.llm.calls().size(), 5u * 3 + 1);
  EXPECT_EQ(f.llm.calls().back(), "terminate");
}

TEST(RlotEnvTest, MaxBlocksIsAConfigDefault) {
  RlotEnvConfig c = Config();
  c.max_blocks = 2;
  Fixture f(c);
  auto t = f.env->RunWith(Input(), [](const State&, int) { return 2; });
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->info.at("blocks"), "debate-debate-terminate");
}

// evaluate_problem (RLoT App. J.2): the problem itself is evaluated before the first block, and
// the first decision sees that state; a chooser that reads no state is spared the call.
TEST(RlotEnvTest, EvaluateProblemGivesTheFirstDecisionTheProblemsState) {
  RlotEnvConfig c = Config();
  c.evaluate_problem = true;
  Fixture f(c);
  f.llm.Fault([](const std::string& kind, int n) -> std::optional<Reply> {
    if (kind != "eval" || n != 1) return std::nullopt;
    return Reply::Json(CompletionBody("A1 score=0\nB1 score=3\nC1 score=1", {}, 10));
  });
  std::vector<State> seen;
  auto t = f.env->RunWith(Input(), [&](const State& s, int d) {
    seen.push_back(s);
    return d == 1 ? 0 : 4;  // Reason, Terminate
  });
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE(t->failure.failed()) << t->failure.message;
  EXPECT_EQ(f.llm.calls(),
            (std::vector<std::string>{"eval", "reason", "finish", "eval", "terminate"}));
  EXPECT_NE(f.llm.prompt(0).find("(none yet)"), std::string::npos);  // no step yet
  const State problem = {0, 0, 0, 3, 0, 1, 0};
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], problem);
  EXPECT_EQ(seen[1], kEvalState);
  ASSERT_EQ(t->transitions.size(), 2u);
  EXPECT_EQ(t->transitions[0].state, std::vector<float>(problem.begin(), problem.end()));
  EXPECT_EQ(t->info.at("eval_keys_missing"), "4");  // A2, A3, B2, C2 of the problem's

  Fixture fixed(c);
  auto u = fixed.env->RunWith(Input(), Sequence({0, 4}), /*reads_state=*/false);
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(fixed.llm.calls(), (std::vector<std::string>{"reason", "finish", "eval", "terminate"}));
  EXPECT_EQ(u->transitions[0].state, std::vector<float>(7, 0.0f));
}

TEST(RlotEnvTest, AFailedEvaluationOfTheProblemFailsTheEpisodeOnly) {
  RlotEnvConfig c = Config();
  c.evaluate_problem = true;
  Fixture f(c);
  f.llm.Fault([](const std::string& kind, int) -> std::optional<Reply> {
    if (kind != "eval") return std::nullopt;
    return Reply::Json(R"({"error":"boom"})", 500);
  });
  int decisions = 0;
  auto t = f.env->RunWith(Input(), [&](const State&, int) {
    ++decisions;
    return 0;
  });
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(t->failure.failed());
  EXPECT_EQ(decisions, 0);
  EXPECT_TRUE(t->transitions.empty());
  EXPECT_EQ(f.llm.calls(), (std::vector<std::string>{"eval"}));
}

TEST(RlotEnvTest, FinishCheckYesAnswersAndEnds) {
  Fixture f;
  f.llm.Set("finish", "Yes, the answer is there.");
  f.llm.Set("terminate", "\\boxed{11}");  // wrong
  auto t = f.env->RunWith(Input(), Sequence({0}));
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(f.llm.calls(), (std::vector<std::string>{"reason", "finish", "terminate"}));
  ASSERT_EQ(t->transitions.size(), 1u);
  EXPECT_TRUE(t->transitions[0].done);
  EXPECT_FLOAT_EQ(t->transitions[0].reward, 0.0f);  // outcome: wrong
  EXPECT_EQ(t->info.at("finished_early"), "true");
  EXPECT_EQ(t->info.at("answer"), "11");
  EXPECT_TRUE(f.scorer->chains.empty());  // a terminal step gets the outcome, not the PRM
}

TEST(RlotEnvTest, MalformedSelfEvaluationScoresMissingKeysZero) {
  Fixture f;
  f.llm.Set("eval", "I think A1 is score=2, and C2: 3. The rest is fine!");
  auto t = f.env->RunWith(Input(), Sequence({0, 4}));
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE(t->failure.failed());
  EXPECT_EQ(t->transitions[0].next_state, (std::vector<float>{2, 0, 0, 0, 0, 0, 3}));
  EXPECT_EQ(t->info.at("eval_keys_missing"), "5");
}

TEST(RlotEnvTest, EndpointErrorEndsTheEpisodeWithItsReason) {
  Fixture f;
  f.llm.Fault([](const std::string& kind, int) -> std::optional<Reply> {
    if (kind == "debate_compare") return Reply::Json(R"({"error":"boom"})", 500);
    return std::nullopt;
  });
  auto t = f.env->RunWith(Input(), Sequence({0, 2, 4}));
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->failure.reason, runtime::FailureReason::kEndpointError) << t->failure.message;
  EXPECT_EQ(t->transitions.size(), 1u);  // the completed Reason step is kept
  EXPECT_EQ(f.llm.calls().back(), "debate_compare");
}

TEST(RlotEnvTest, RunawayOutputIsAFormatError) {
  Fixture f;
  f.llm.Fault([](const std::string& kind, int) -> std::optional<Reply> {
    if (kind == "reason")
      return Reply::Json(CompletionBody("and so on and so on", {}, 10, "length"));
    return std::nullopt;
  });
  auto t = f.env->RunWith(Input(), Sequence({0, 4}));
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->failure.reason, runtime::FailureReason::kFormatError);
  EXPECT_NE(t->failure.message.find("runaway"), std::string::npos) << t->failure.message;
  // The failing decision is the episode's last transition: terminal, with failure_reward (0 by
  // default, a wrong answer's outcome), so that the learner sees where Reason led.
  ASSERT_EQ(t->transitions.size(), 1u);
  EXPECT_EQ(t->transitions[0].action, 0u);
  EXPECT_TRUE(t->transitions[0].done);
  EXPECT_EQ(t->transitions[0].reward, 0.0f);
  EXPECT_EQ(t->info.at("failed_block"), "reason");
}

// A block that runs away after a good one: the good transition stays, the failing decision
// gets failure_reward and ends the episode. (The env used to leave the failing decision out,
// and the learner dropped the whole failed episode: the navigator never learned that the
// choice led to a failure.)
TEST(RlotEnvTest, AFailingBlockEndsTheEpisodeWithTheFailureReward) {
  auto runaway_plans = [](const std::string& kind, int) -> std::optional<Reply> {
    if (kind == "debate_plans") {
      return Reply::Json(CompletionBody("Plan1: and so", {}, 10, "length"));
    }
    return std::nullopt;
  };
  RlotEnvConfig c = Config();
  c.failure_reward = -1.0;
  Fixture f(c);
  f.llm.Fault(runaway_plans);
  auto t = f.env->RunWith(Input(), Sequence({0, 2, 4}));
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->failure.reason, runtime::FailureReason::kFormatError) << t->failure.message;
  ASSERT_EQ(t->transitions.size(), 2u);
  EXPECT_EQ(t->transitions[0].action, 0u);
  EXPECT_FALSE(t->transitions[0].done);
  EXPECT_NEAR(t->transitions[0].reward, 0.1, 1e-6);  // the scorer's score of one step
  EXPECT_EQ(t->transitions[1].action, 2u);
  EXPECT_TRUE(t->transitions[1].done);
  EXPECT_EQ(t->transitions[1].reward, -1.0f);
  EXPECT_EQ(t->transitions[1].state, t->transitions[0].next_state);
  ASSERT_EQ(t->step_rewards.size(), 2u);
  EXPECT_DOUBLE_EQ(t->rewards[0].second, -1.0);  // outcome
  EXPECT_NEAR(t->reward, -1.0 + 0.1, 1e-12);
  EXPECT_EQ(t->info.at("failed_block"), "debate");

  // Shaped: the failure reward is the outcome the potential is subtracted from, as an answer's.
  c.step_reward = "shaped";
  c.shaping_gamma = 0.9;
  Fixture g(c);
  g.llm.Fault(runaway_plans);
  auto s = g.env->RunWith(Input(), Sequence({0, 2, 4}));
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(s->step_rewards.size(), 2u);
  EXPECT_NEAR(s->step_rewards[0], 0.9 * 0.1, 1e-12);
  EXPECT_NEAR(s->step_rewards[1], -1.0 - 0.1, 1e-12);
  EXPECT_TRUE(s->transitions[1].done);
}

TEST(RlotEnvTest, FailingStepScorerEndsTheEpisode) {
  Fixture f;
  f.scorer->fail = true;
  auto t = f.env->RunWith(Input(), Sequence({0, 4}));
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->failure.reason, runtime::FailureReason::kEndpointError);
  EXPECT_NE(t->failure.message.find("prm down"), std::string::npos);
}

TEST(RlotEnvTest, BadItemsAndEpsilonFailCleanly) {
  Fixture f;
  runtime::EpisodeInput in = Input();
  in.dataset_item = "not json";
  auto t = f.env->RunWith(in, Sequence({4}));
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->failure.reason, runtime::FailureReason::kEnvError);
  EXPECT_TRUE(f.llm.calls().empty());
  in = Input();
  in.sampling.epsilon = 1.5;
  auto e = f.env->Run(in);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->failure.reason, runtime::FailureReason::kEnvError);
}

// RLoT's own item parser graded an item without an answer against "": every episode of it
// was a wrong answer, and the navigator learned from noise. It now fails naming the field.
TEST(RlotEnvTest, AnItemWithoutAnAnswerFailsNamingTheField) {
  Fixture f;
  runtime::EpisodeInput in = Input();
  in.dataset_item = json{{"question", "What is (2+3)*2?"}, {"source", "hard.jsonl:7"}}.dump();
  auto t = f.env->RunWith(in, Sequence({4}));
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->failure.reason, runtime::FailureReason::kEnvError);
  EXPECT_NE(t->failure.message.find("hard.jsonl:7: field 'answer'"), std::string::npos)
      << t->failure.message;
  EXPECT_TRUE(f.llm.calls().empty());
}

// RLoT's own item parser dropped an item's options: a multiple-choice problem reached the LLM
// without its choices.
TEST(RlotEnvTest, AnItemsOptionsReachThePrompt) {
  Fixture f;
  runtime::EpisodeInput in = Input();
  in.dataset_item = json{
      {"question", "Which is 10?"},
      {"answer", "B"},
      {"options", {"9", "10"}},
      {"answer_format",
       "choice"}}.dump();
  auto t = f.env->RunWith(in, Sequence({4}));
  ASSERT_TRUE(t.ok());
  ASSERT_FALSE(f.llm.calls().empty());
  EXPECT_NE(f.llm.prompt(0).find("Which is 10?\n\nA) 9\nB) 10"), std::string::npos)
      << f.llm.prompt(0);
}

TEST(RlotEnvTest, WithoutAPolicyActsUniformlyAndSeeded) {
  Fixture f;
  runtime::EpisodeInput in = Input();
  in.seed = 42;
  auto a = f.env->Run(in);
  auto b = f.env->Run(in);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_FALSE(a->failure.failed()) << a->failure.message;
  EXPECT_EQ(a->info.at("chosen"), b->info.at("chosen"));
  EXPECT_LE(a->transitions.size(), 6u);
  EXPECT_TRUE(a->transitions.back().done);
}

TEST(RlotEnvTest, PrmEndpointScoresTheChain) {
  // The PRM behind a real HTTP route: a scripted /pooling reply with P(+) at each step tag.
  ScriptedServer prm;
  prm.SetHandler([](const llm::testing::ServerRequest& req) {
    const json body = json::parse(req.body);
    EXPECT_EQ(req.path, "/pooling");
    EXPECT_EQ(body["model"], "math-prm");
    const std::string input = body["input"];
    json rows = json::array();
    for (size_t p = input.find("Step "); p != std::string::npos; p = input.find("Step ", p + 1)) {
      rows.push_back({0.75, 0.25});
    }
    json item = {{"index", 0}, {"data", rows}};
    json reply = json::object();
    reply["data"] = json::array({item});
    reply["usage"] = {{"prompt_tokens", 40}, {"completion_tokens", 0}};
    return Reply::Json(reply.dump());
  });
  ScriptedLlm llm;
  RlotEnvConfig c = Config();
  c.step_scorer = "prm";
  llm::EndpointConfig policy, prm_ep;
  c.llm_endpoint = "policy";
  c.prm_endpoint = "prm";
  c.prm.mode = "pooling";
  prm_ep.name = "prm";
  prm_ep.base_url = prm.url() + "/v1";
  prm_ep.model = "math-prm";
  prm_ep.params_b = 7.0;
  prm_ep.usd_per_m_input = 1.0;
  auto client_policy = llm.Client();
  policy = *client_policy->endpoint("policy");
  c.endpoints = {policy, prm_ep};
  auto env = RlotEnv::Create(c);  // builds its own client and PRM transport
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  auto t = (*env)->RunWith(Input(), Sequence({0, 0, 4}));
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE(t->failure.failed()) << t->failure.message;
  ASSERT_EQ(t->transitions.size(), 3u);
  EXPECT_FLOAT_EQ(t->transitions[0].reward, 0.75f);
  EXPECT_FLOAT_EQ(t->transitions[1].reward, 0.75f);
  EXPECT_EQ(prm.request_count("/pooling"), 2);
  // The PRM's calls are in the episode's per-endpoint accounting, beside the LLM's.
  const llm::UsageTotals& p = t->usage.by_endpoint.at("prm");
  EXPECT_EQ(p.calls, 2);
  EXPECT_EQ(p.failed_calls, 0);
  EXPECT_EQ(p.prompt_tokens, 80);
  EXPECT_NEAR(p.cost_usd, 80 * 1.0 / 1e6, 1e-12);
  EXPECT_GT(p.energy_j, 0.0);
  EXPECT_GT(p.latency_s, 0.0);
  EXPECT_EQ(t->usage.by_endpoint.at("policy").calls, static_cast<int64_t>(llm.calls().size()));
  EXPECT_EQ(t->usage.total.calls, 2 + static_cast<int64_t>(llm.calls().size()));
}

TEST(RlotEnvTest, FailedPrmCallsAreAccountedAsFailed) {
  ScriptedServer prm;
  prm.SetHandler([](const llm::testing::ServerRequest&) {
    return Reply::Json(R"({"error":{"message":"prm overloaded"}})", 503);
  });
  ScriptedLlm llm;
  RlotEnvConfig c = Config();
  c.prm.mode = "pooling";
  llm::EndpointConfig prm_ep;
  prm_ep.name = "prm";
  prm_ep.base_url = prm.url();
  prm_ep.model = "math-prm";
  c.endpoints = {*llm.Client()->endpoint("policy"), prm_ep};
  auto env = RlotEnv::Create(c);
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  auto t = (*env)->RunWith(Input(), Sequence({0, 4}));
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->failure.reason, runtime::FailureReason::kEndpointError);
  EXPECT_NE(t->failure.message.find("prm overloaded"), std::string::npos);
  EXPECT_EQ(t->usage.by_endpoint.at("prm").calls, 1);
  EXPECT_EQ(t->usage.by_endpoint.at("prm").failed_calls, 1);
}

TEST(RlotEnvTest, ConfigErrorsNameTheField) {
  RlotEnvConfig c = Config();
  c.prompts_dir = "missing";
  EXPECT_EQ(RlotEnv::Create(c, nullptr, std::make_shared<CountingScorer>()).status().code(),
            StatusCode::kNotFound);
  c = Config();
  auto no_endpoints = RlotEnv::Create(c);
  ASSERT_FALSE(no_endpoints.ok());
  EXPECT_NE(no_endpoints.status().message().find("env.rlot.endpoints"), std::string::npos);
  ScriptedLlm llm;
  c.llm_endpoint = "nope";
  auto bad = RlotEnv::Create(c, llm.Client(), std::make_shared<CountingScorer>());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("llm_endpoint"), std::string::npos);
}

// step_reward: shaped (Ng et al. 1999 shaping, the score as potential): with CountingScorer's
// scores 0.1, 0.2, 0.3 and 0.3 (Refine rewrites step 3) each block earns
// gamma * score(new) - score(old) and Terminate outcome - score(last), so the discounted
// return telescopes to gamma^4 * outcome. A flipped sign or another gamma changes every value.
TEST(RlotEnvTest, ShapedStepRewardTelescopesToTheDiscountedOutcome) {
  RlotEnvConfig c = Config();
  c.step_reward = "shaped";
  c.shaping_gamma = 0.9;
  Fixture f(c);
  auto t = f.env->RunWith(Input(), Sequence({3, 1, 2, 3, 4}));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_FALSE(t->failure.failed()) << t->failure.message;
  const std::vector<double> expected = {0.9 * 0.1 - 0.0, 0.9 * 0.2 - 0.1, 0.9 * 0.3 - 0.2,
                                        0.9 * 0.3 - 0.3, 1.0 - 0.3};
  ASSERT_EQ(t->transitions.size(), expected.size());
  ASSERT_EQ(t->step_rewards.size(), expected.size());
  double discounted = 0.0, discount = 1.0;
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(t->transitions[i].reward, expected[i], 1e-6) << i;
    EXPECT_NEAR(t->step_rewards[i], expected[i], 1e-12) << i;
    discounted += discount * t->step_rewards[i];
    discount *= 0.9;
  }
  EXPECT_LT(t->transitions[3].reward, 0.0f);  // the Refine that re-earns 0.3 now costs 0.03
  EXPECT_NEAR(discounted, std::pow(0.9, 4) * 1.0, 1e-12);
  // outcome stays the outcome; prm is the shaping terms' sum, -(1 - gamma) x the scores' sum,
  // so that outcome + prm is the undiscounted return; the raw scores are in info.
  EXPECT_DOUBLE_EQ(t->rewards[0].second, 1.0);
  EXPECT_EQ(t->rewards[1].first, "prm");
  EXPECT_NEAR(t->rewards[1].second, -0.1 * (0.1 + 0.2 + 0.3 + 0.3), 1e-12);
  EXPECT_NEAR(t->reward, 1.0 - 0.09, 1e-12);
  EXPECT_EQ(t->info.at("step_scores"), "0.1,0.2,0.3,0.3");
  EXPECT_EQ(t->info.at("step_reward"), "shaped");

  // A wrong answer, another gamma: the discounted return is 0, however high the scores.
  c.shaping_gamma = 0.8;
  Fixture g(c);
  auto w = g.env->RunWith(Input("11"), Sequence({0, 0, 4}));
  ASSERT_TRUE(w.ok());
  EXPECT_FALSE(w->failure.failed()) << w->failure.message;
  ASSERT_EQ(w->step_rewards.size(), 3u);
  EXPECT_NEAR(w->step_rewards[0], 0.8 * 0.1, 1e-12);
  EXPECT_NEAR(w->step_rewards[1], 0.8 * 0.2 - 0.1, 1e-12);
  EXPECT_NEAR(w->step_rewards[2], 0.0 - 0.2, 1e-12);
  EXPECT_NEAR(w->step_rewards[0] + 0.8 * w->step_rewards[1] + 0.64 * w->step_rewards[2], 0.0,
              1e-12);
  EXPECT_DOUBLE_EQ(w->rewards[0].second, 0.0);
}

// step_reward: score is the default and RLoT's: the score per block, the outcome at the end.
TEST(RlotEnvTest, ScoreStepRewardIsTheDefaultAndKeepsRlotsRewards) {
  EXPECT_EQ(RlotEnvConfig{}.step_reward, "score");
  RlotEnvConfig c = Config();
  c.step_reward = "score";
  c.shaping_gamma = 0.9;  // read only under shaped
  Fixture f(c);
  auto t = f.env->RunWith(Input(), Sequence({3, 1, 2, 3, 4}));
  ASSERT_TRUE(t.ok());
  const std::vector<double> expected = {0.1, 0.2, 0.3, 0.3, 1.0};
  ASSERT_EQ(t->step_rewards.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(t->step_rewards[i], expected[i], 1e-12) << i;
    EXPECT_FLOAT_EQ(t->transitions[i].reward, static_cast<float>(expected[i])) << i;
  }
  EXPECT_NEAR(t->rewards[1].second, 0.9, 1e-12);
  EXPECT_EQ(t->info.at("step_scores"), "0.1,0.2,0.3,0.3");
}

// An unknown step_reward is refused naming the field; shaped needs the learner's discount,
// which the recipe copies from dqn.gamma and never lets disagree with it.
TEST(RlotEnvTest, StepRewardConfigErrorsNameTheField) {
  auto node = config::ParseYaml("step_reward: potential\n", "env.rlot");
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  RlotEnvConfig loaded;
  Status bad = config::Load(*node, loaded);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("step_reward"), std::string::npos) << bad.message();
  EXPECT_NE(bad.message().find("shaped"), std::string::npos) << bad.message();

  ScriptedLlm llm;
  RlotEnvConfig c = Config();
  c.step_reward = "potential";  // built in code, past the schema
  auto unknown = RlotEnv::Create(c, llm.Client(), std::make_shared<CountingScorer>());
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("env.rlot.step_reward"), std::string::npos);
  c.step_reward = "shaped";  // shaping_gamma not filled in
  auto no_gamma = RlotEnv::Create(c, llm.Client(), std::make_shared<CountingScorer>());
  ASSERT_FALSE(no_gamma.ok());
  EXPECT_NE(no_gamma.status().message().find("env.rlot.shaping_gamma"), std::string::npos);

  c.step_scorer = "rule";
  const std::vector<llm::EndpointConfig> endpoints = {*llm.Client()->endpoint("policy")};
  auto filled = CompleteRlotEnvConfig(c, endpoints, {}, 0.9, "");
  ASSERT_TRUE(filled.ok()) << filled.status().ToString();
  EXPECT_DOUBLE_EQ(filled->shaping_gamma, 0.9);
  auto text = RlotEnvConfigForRun(c, endpoints, {}, 0.9, "");  // what the workers build from
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->find("shaping_gamma: 0.9"), std::string::npos) << *text;
  c.shaping_gamma = 0.99;
  auto differs = CompleteRlotEnvConfig(c, endpoints, {}, 0.9, "");
  ASSERT_FALSE(differs.ok());
  EXPECT_NE(differs.status().message().find("env.rlot.shaping_gamma"), std::string::npos);
  EXPECT_NE(differs.status().message().find("dqn.gamma"), std::string::npos);
  c.shaping_gamma = 0.9;  // set, and equal: fine
  EXPECT_TRUE(CompleteRlotEnvConfig(c, endpoints, {}, 0.9, "").ok());
}

datasets::Example Problem(const std::string& id, const std::string& answer) {
  datasets::Example e;
  e.id = id;
  e.question = "What is (2+3)*2?";
  e.answer = answer;
  e.answer_format = "boxed";
  return e;
}

TEST(RlotEvalTest, SelfConsistencyVotesOverEquivalentAnswers) {
  Fixture f;
  // Trails answer 10, 2*5 (equivalent), 11: the majority is 10 whatever the seed.
  f.llm.Fault([](const std::string& kind, int n) -> std::optional<Reply> {
    if (kind != "terminate") return std::nullopt;
    const char* answers[] = {"\\boxed{10}", "\\boxed{2*5}", "\\boxed{11}"};
    return Reply::Json(CompletionBody(answers[(n - 1) % 3], {}, 10));
  });
  RlotEvalOptions o;
  o.trails = 3;
  auto r = EvaluateRlot(*f.env, {Problem("p1", "10"), Problem("p2", "11")}, FixedChooser({0}),
                        "fixed:reason", o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->problems, 2);
  EXPECT_EQ(r->trail_total, 6);
  EXPECT_EQ(r->trail_correct, 2 + 1);  // p1: 10 and 2*5; p2: 11
  EXPECT_EQ(r->voted_correct, 1);      // both vote 10
  EXPECT_EQ(r->tied_votes, 0);
  EXPECT_EQ(r->actions[0], 6);
  EXPECT_EQ(r->actions[4], 6);
  EXPECT_EQ(r->patterns.at(1).at("Reason"), 6);
  EXPECT_EQ(r->usage.calls, 6 * 4);  // reason, finish, eval, terminate
  EXPECT_NE(r->ToJson().find("\"self_consistent_accuracy\": 0.5"), std::string::npos);
  // Every trail is kept per problem, in order, so methods can be compared problem by problem.
  ASSERT_EQ(r->items.size(), 2u);
  EXPECT_EQ(r->items[0].id, "p1");
  EXPECT_TRUE(r->items[0].voted_correct);
  EXPECT_FALSE(r->items[1].voted_correct);
  ASSERT_EQ(r->items[1].trails.size(), 3u);
  EXPECT_EQ(r->items[1].trails[0].blocks, "reason-terminate");
  EXPECT_EQ(r->items[1].trails[0].answer, "10");  // the 4th terminate call overall
  EXPECT_FALSE(r->items[1].trails[0].correct);
  EXPECT_TRUE(r->items[1].trails[2].correct);  // "11"
  const auto j = nlohmann::json::parse(r->ToJson());
  ASSERT_EQ(j["items"].size(), 2u);
  EXPECT_EQ(j["items"][1]["trails"][2]["answer"], "11");
  EXPECT_EQ(j["items"][1]["trails"][2]["correct"], true);
}

// The baselines read no state: evaluate_problem adds no call to a fixed sequence or to direct.
TEST(RlotEvalTest, FixedSequencesAreNotChargedForTheProblemsEvaluation) {
  RlotEnvConfig c = Config();
  c.evaluate_problem = true;
  Fixture f(c);
  RlotEvalOptions o;
  o.trails = 1;
  auto r = EvaluateRlot(*f.env, {Problem("p1", "10")}, FixedChooser({0}), "fixed:reason", o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->usage.calls, 4);  // reason, finish, eval, terminate
  auto d = EvaluateRlot(*f.env, {Problem("p1", "10")}, FixedChooser({}), "direct", o);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->usage.calls, 1);
  EXPECT_FALSE(FixedChooser({}).reads_state);
  EXPECT_TRUE(NavigatorChooser(std::make_shared<const models::NavigatorMlp>()).reads_state);
}

TEST(RlotEvalTest, TiesAreBrokenBySeed) {
  std::set<int64_t> outcomes;
  for (uint64_t seed = 0; seed < 12; ++seed) {
    Fixture f;
    f.llm.Fault([](const std::string& kind, int n) -> std::optional<Reply> {
      if (kind != "terminate") return std::nullopt;
      return Reply::Json(CompletionBody(n % 2 ? "\\boxed{10}" : "\\boxed{11}", {}, 10));
    });
    RlotEvalOptions o;
    o.trails = 2;
    o.seed = seed;
    auto r = EvaluateRlot(*f.env, {Problem("p", "10")}, FixedChooser({}), "direct", o);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->tied_votes, 1);
    outcomes.insert(r->voted_correct);
  }
  EXPECT_EQ(outcomes, (std::set<int64_t>{0, 1}));  // both tied answers win for some seed
}

TEST(RlotEvalTest, HardProblemsAreTheOnesAnsweredWrongDirectly) {
  Fixture f;  // answers \boxed{10} at once
  int64_t failed = -1;
  auto hard = KeepHardProblems(*f.env, {Problem("easy", "10"), Problem("hard", "12")}, 1, &failed);
  ASSERT_TRUE(hard.ok());
  ASSERT_EQ(hard->size(), 1u);
  EXPECT_EQ((*hard)[0].id, "hard");
  EXPECT_EQ(failed, 0);
  EXPECT_EQ(f.llm.calls(), (std::vector<std::string>{"terminate", "terminate"}));
}

TEST(RlotEvalTest, KeepHardCommandCopiesTheOriginalLines) {
  Fixture f;  // answers \boxed{10} at once
  const std::string dir = ::testing::TempDir();
  const std::string in = dir + "/rlot_all.jsonl", out = dir + "/rlot_hard.jsonl";
  std::ofstream(in) << R"({"id": "a", "question": "5+5?", "answer": "10"})"
                    << "\n"
                    << R"({"id": "b", "question": "6+6?", "answer": "12", "note": "kept"})"
                    << "\n";
  datasets::DatasetConfig data;
  data.path = in;
  data.fields.answer_format = "boxed";
  std::ostringstream o, e;
  ASSERT_EQ(RunKeepHardCommand(*f.env, data, out, 1, o, e), 0) << e.str();
  std::ifstream kept(out);
  std::stringstream ss;
  ss << kept.rdbuf();
  EXPECT_EQ(
      ss.str(),
      std::string(R"({"id": "b", "question": "6+6?", "answer": "12", "note": "kept"})") + "\n");
  EXPECT_NE(o.str().find("hard problems: 1 of 2"), std::string::npos) << o.str();
}

}  // namespace
}  // namespace allot::envs::rlot

namespace allot::envs::rlot {
namespace {

TEST(RlotEvalTest, ZeroShotCotIsOneCallPerTrailInTheDatasetsFormat) {
  Fixture f;
  RlotEvalOptions o;
  o.trails = 1;
  auto r = EvaluateChainOfThought(*f.env, {Problem("p1", "10"), Problem("p2", "7")}, "cot", o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(f.llm.calls(), (std::vector<std::string>{"cot", "cot"}));
  EXPECT_NE(f.llm.prompt(0).find("What is (2+3)*2?"), std::string::npos);
  EXPECT_NE(f.llm.prompt(0).find("\\boxed{}"), std::string::npos);  // the format instruction
  EXPECT_EQ(r->method, "cot");
  EXPECT_EQ(r->trail_total, 2);
  EXPECT_EQ(r->trail_correct, 1);
  EXPECT_EQ(r->blocks, 0);  // no logic blocks, no PRM
  EXPECT_TRUE(f.scorer->chains.empty());
  EXPECT_EQ(r->usage.calls, 2);
}

TEST(RlotEvalTest, CotScVotesOverFourSamplesOfEquivalentAnswers) {
  Fixture f;
  // Samples 10, 11, 2*5, 12: the equivalent 10 and 2*5 win the vote (RLoT Sec. 4.1: CoT-SC
  // votes over four samples).
  f.llm.Fault([](const std::string& kind, int n) -> std::optional<Reply> {
    if (kind != "cot") return std::nullopt;
    const char* answers[] = {"\\boxed{10}", "\\boxed{11}", "\\boxed{2*5}", "\\boxed{12}"};
    return Reply::Json(CompletionBody(answers[(n - 1) % 4], {}, 10));
  });
  RlotEvalOptions o;
  o.trails = 1;  // --trails is for the other methods: CoT-SC takes env.rlot.cot_sc_samples
  auto r = EvaluateChainOfThought(*f.env, {Problem("p1", "10")}, "cot-sc", o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(f.env->config().cot_sc_samples, 4);
  EXPECT_EQ(r->trails, 4);
  EXPECT_EQ(f.llm.calls(), std::vector<std::string>(4, "cot"));
  EXPECT_EQ(r->trail_correct, 2);
  EXPECT_EQ(r->voted_correct, 1);
  EXPECT_EQ(r->tied_votes, 0);
  EXPECT_NE(r->ToJson().find("\"method\": \"cot-sc\""), std::string::npos);
  EXPECT_FALSE(EvaluateChainOfThought(*f.env, {}, "navigator", o).ok());
}

TEST(RlotEvalTest, CotWithoutItsTemplateIsRefusedNamingTheFile) {
  // The block templates without zero_shot_cot.txt.
  const std::string from = std::string(ALLOT_SOURCE_DIR) + "/configs/prompts/tinyworld/rlot";
  const std::string dir = ::testing::TempDir() + "/rlot_prompts_no_cot";
  std::filesystem::create_directories(dir);
  for (const auto& e : std::filesystem::directory_iterator(from)) {
    if (e.path().filename() == "zero_shot_cot.txt") continue;
    std::filesystem::copy_file(e.path(), dir + "/" + e.path().filename().string(),
                               std::filesystem::copy_options::overwrite_existing);
  }
  std::filesystem::remove(dir + "/zero_shot_cot.txt");
  RlotEnvConfig c = Config();
  c.prompts_dir = dir;
  Fixture f(c);
  ASSERT_NE(f.env, nullptr);
  auto t = f.env->RunChainOfThought(Input());
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("zero_shot_cot.txt"), std::string::npos);
  EXPECT_TRUE(f.llm.calls().empty());
}

// A rollout worker builds the env from the env_config text the learner sent: the text names
// each endpoint's key variable, never a key, and the worker reads the key from its own
// environment (llm::ResolveApiKey).
TEST(RlotEnvTest, AWorkerResolvesApiKeysFromItsOwnEnvironment) {
  constexpr const char* kVar = "ALLOT_TEST_RLOT_WORKER_KEY";
  constexpr const char* kKey = "sk-worker-5e2d";
  ScriptedServer server;
  server.SetHandler([](const llm::testing::ServerRequest&) {
    return Reply::Json(CompletionBody("\\boxed{10}", {}, 10));
  });
  RlotEnvConfig c = Config();
  c.step_scorer = "rule";
  llm::EndpointConfig e;
  e.name = "policy";
  e.base_url = server.url();
  e.model = "scripted";
  e.api_key_env = kVar;
  c.endpoints = {e};
  ASSERT_EQ(setenv(kVar, kKey, 1), 0);
  const std::string env_config = config::ToYaml(c);  // what travels to the worker
  EXPECT_NE(env_config.find(kVar), std::string::npos);
  EXPECT_EQ(env_config.find(kKey), std::string::npos);

  struct Capture : runtime::EnvRegistrar {
    void Register(const std::string& name, runtime::EnvFactory f) override {
      EXPECT_EQ(name, "rlot");
      factory = std::move(f);
    }
    runtime::EnvFactory factory;
  } registry;
  RegisterRlotEnv(registry);
  auto env = registry.factory(env_config);
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  auto* rlot = dynamic_cast<RlotEnv*>(env->get());
  ASSERT_NE(rlot, nullptr);
  auto t = rlot->RunChainOfThought(Input());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_FALSE(t->failure.failed()) << t->failure.message;
  ASSERT_EQ(server.requests().size(), 1u);
  EXPECT_EQ(server.requests()[0].headers.at("authorization"), std::string("Bearer ") + kKey);

  // A worker without the variable refuses to build the env, naming the variable only.
  unsetenv(kVar);
  auto missing = registry.factory(env_config);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find(kVar), std::string::npos);
  EXPECT_EQ(missing.status().message().find(kKey), std::string::npos);
}

}  // namespace
}  // namespace allot::envs::rlot
