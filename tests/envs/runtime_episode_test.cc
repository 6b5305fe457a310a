// The episode runtime against a scripted endpoint: token fidelity across turns (no
// decode/re-encode drift), segments and masks, accounting, limits, cancellation, deadlines and
// failure mapping.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "envs/runtime/episode.h"
#include "envs/runtime/prompt_template.h"
#include "llm/client.h"
#include "tests/envs/runtime_test_util.h"

namespace allot::envs::runtime {
namespace {

using llm::testing::Reply;
using llm::testing::ScriptedServer;
using testing::Bodies;
using testing::FakeTokenize;
using testing::Sampled;

class RuntimeEpisodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::ServeFakeTokenizer(server_);
    auto c = llm::Client::Create({testing::ScriptedEndpoint(server_, "policy")});
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    client_ = std::move(c).value();
  }
  ScriptedServer server_;
  std::unique_ptr<llm::Client> client_;
  EpisodeInput input_;
};

std::vector<int64_t> Concat(std::initializer_list<std::vector<int64_t>> parts) {
  std::vector<int64_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// verl #3720 / slime #2263: re-tokenizing the decoded history changes the ids the policy
// sampled. The sampled ids here ({5, 6, 7}, {8, 9}) decode to text whose fake tokenization
// is entirely different, so any decode/re-encode of an earlier turn shows up in the prompt.
TEST_F(RuntimeEpisodeTest, MultiTurnIdsAreExactlySampledPlusInsertedWithoutRetokenizing) {
  server_.Script("/v1/completions", {Reply::Json(Sampled("Let me", {5, 6, 7})),
                                     Reply::Json(Sampled(" done", {8, 9}))});
  Episode ep(client_.get(), EpisodeLimits{}, input_);
  Conversation conv("policy");
  ASSERT_TRUE(ep.AppendText(conv, SegmentRole::kPrompt, "Q?").ok());
  GenerateOptions o;
  o.policy_version = 7;
  o.step = 1;
  auto t1 = ep.Generate(conv, o);
  ASSERT_TRUE(t1.ok()) << t1.status().ToString();
  ASSERT_TRUE(ep.AppendText(conv, SegmentRole::kTool, "[r]", 1, "calc").ok());
  o.step = 2;
  auto t2 = ep.Generate(conv, o);
  ASSERT_TRUE(t2.ok()) << t2.status().ToString();

  const std::vector<int64_t> expected =
      Concat({FakeTokenize("Q?"), {5, 6, 7}, FakeTokenize("[r]"), {8, 9}});
  EXPECT_EQ(conv.ids(), expected);
  // The second request's prompt is the first turn's ids verbatim.
  auto completions = Bodies(server_, "/v1/completions");
  ASSERT_EQ(completions.size(), 2u);
  EXPECT_EQ(completions[0]["prompt"].get<std::vector<int64_t>>(), FakeTokenize("Q?"));
  EXPECT_EQ(completions[1]["prompt"].get<std::vector<int64_t>>(),
            Concat({FakeTokenize("Q?"), {5, 6, 7}, FakeTokenize("[r]")}));
  EXPECT_TRUE(completions[0]["return_token_ids"].get<bool>());
  EXPECT_EQ(completions[0]["logprobs"].get<int>(), 1);
  // Only env-inserted text was ever tokenized; nothing was detokenized.
  auto tokenized = Bodies(server_, "/tokenize");
  ASSERT_EQ(tokenized.size(), 2u);
  EXPECT_EQ(tokenized[0]["prompt"], "Q?");
  EXPECT_EQ(tokenized[1]["prompt"], "[r]");
  EXPECT_EQ(server_.request_count("/detokenize"), 0);

  // Segments, masks, log-probs, versions and steps.
  const auto& segs = conv.segments();
  ASSERT_EQ(segs.size(), 4u);
  EXPECT_EQ(segs[0].role, SegmentRole::kPrompt);
  EXPECT_FALSE(segs[0].trainable);
  EXPECT_TRUE(segs[0].logprobs.empty());
  EXPECT_EQ(segs[1].role, SegmentRole::kPolicy);
  EXPECT_TRUE(segs[1].trainable);
  EXPECT_EQ(segs[1].logprobs, std::vector<float>(3, -0.5f));
  EXPECT_EQ(segs[1].policy_version, 7u);
  EXPECT_EQ(segs[1].step, 1u);
  EXPECT_EQ(segs[2].role, SegmentRole::kTool);
  EXPECT_FALSE(segs[2].trainable);
  EXPECT_EQ(segs[2].source, "calc");
  EXPECT_EQ(segs[3].step, 2u);
  EXPECT_EQ(t2->text, " done");

  // Accounting per endpoint.
  Trajectory traj;
  ep.Finish(traj);
  EXPECT_EQ(traj.usage.by_endpoint.at("policy").calls, 2);
  EXPECT_EQ(traj.usage.total.completion_tokens, 5);
  EXPECT_GT(traj.usage.total.cost_usd, 0.0);
  EXPECT_GT(traj.usage.total.energy_j, 0.0);
  EXPECT_GT(traj.latency_ms, 0.0);
}

TEST_F(RuntimeEpisodeTest, ReplyWithoutTokenIdsIsRefusedNotReencoded) {
  server_.Script("/v1/completions",
                 {Reply::Json(R"({"choices":[{"index":0,"text":"hi","finish_reason":"stop"}],)"
                              R"("usage":{"prompt_tokens":1,"completion_tokens":1}})")});
  Episode ep(client_.get(), EpisodeLimits{}, input_);
  Conversation conv("policy");
  ASSERT_TRUE(ep.AppendText(conv, SegmentRole::kPrompt, "Q").ok());
  auto t = ep.Generate(conv, {});
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("no token ids"), std::string::npos);
  EXPECT_EQ(Episode::FailureFrom(t.status(), FailureReason::kEnvError).reason,
            FailureReason::kEndpointError);
  EXPECT_EQ(server_.request_count("/tokenize"), 1);  // the prompt only
}

TEST_F(RuntimeEpisodeTest, PolicyTurnWithoutLogprobsIsRefused) {
  server_.Script("/v1/completions", {Reply::Json(llm::testing::CompletionBody("ab", {5, 6}, 1))});
  Episode ep(client_.get(), EpisodeLimits{}, input_);
  Conversation conv("policy");
  ASSERT_TRUE(ep.AppendText(conv, SegmentRole::kPrompt, "Q").ok());
  auto refused = ep.Generate(conv, {});
  ASSERT_FALSE(refused.ok());
  // The message names the endpoint by name and URL (truncated IS needs its log-probs).
  EXPECT_NE(refused.status().message().find("endpoint 'policy' (" + server_.url() + ")"),
            std::string::npos)
      << refused.status().message();
  // Another model's turn needs no log-probs.
  server_.Script("/v1/completions", {Reply::Json(llm::testing::CompletionBody("ab", {5, 6}, 1))});
  GenerateOptions other;
  other.role = SegmentRole::kOtherModel;
  auto t = ep.Generate(conv, other);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_FALSE(conv.segments().back().trainable);
}

TEST_F(RuntimeEpisodeTest, TurnToolAndTokenLimits) {
  server_.Script("/v1/completions", {Reply::Json(Sampled("a", {5}))});
  EpisodeLimits limits;
  limits.max_turns = 1;
  limits.max_tool_calls = 1;
  Episode ep(client_.get(), limits, input_);
  Conversation conv("policy");
  ASSERT_TRUE(ep.AppendText(conv, SegmentRole::kPrompt, "Q").ok());
  ASSERT_TRUE(ep.Generate(conv, {}).ok());
  auto over = ep.Generate(conv, {});
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(Episode::FailureFrom(over.status(), FailureReason::kEnvError).reason,
            FailureReason::kFormatError);
  EXPECT_TRUE(ep.BeginToolCall().ok());
  EXPECT_EQ(ep.BeginToolCall().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(server_.request_count("/v1/completions"), 1);

  // The token budget caps max_tokens and refuses a call that cannot fit.
  EpisodeLimits tight;
  tight.max_total_tokens = 4;
  tight.max_turn_tokens = 100;
  Episode small(client_.get(), tight, input_);
  Conversation c2("policy");
  ASSERT_TRUE(small.AppendText(c2, SegmentRole::kPrompt, "abc").ok());
  server_.Script("/v1/completions", {Reply::Json(Sampled("x", {5}))});
  ASSERT_TRUE(small.Generate(c2, {}).ok());
  EXPECT_EQ(Bodies(server_, "/v1/completions").back()["max_tokens"].get<int>(), 1);
  EXPECT_EQ(small.Generate(c2, {}).status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(server_.request_count("/v1/completions"), 2);
}

TEST_F(RuntimeEpisodeTest, EndpointErrorEndsTheEpisodeWithItsReason) {
  server_.Script("/v1/completions", {Reply::Json(R"({"error":"boom"})", 500)});
  Episode ep(client_.get(), EpisodeLimits{}, input_);
  Conversation conv("policy");
  ASSERT_TRUE(ep.AppendText(conv, SegmentRole::kPrompt, "Q").ok());
  auto t = ep.Generate(conv, {});
  ASSERT_FALSE(t.ok());
  Failure f = Episode::FailureFrom(t.status(), FailureReason::kEnvError);
  EXPECT_EQ(f.reason, FailureReason::kEndpointError);
  EXPECT_NE(f.message.find("policy"), std::string::npos) << f.message;
  Trajectory traj;
  ep.Finish(traj);
  EXPECT_EQ(traj.usage.total.failed_calls, 1);
  EXPECT_EQ(conv.segments().size(), 1u);  // nothing appended for the failed turn
}

TEST_F(RuntimeEpisodeTest, CancellationAndDeadlineStopBeforeCalling) {
  std::atomic<bool> cancelled{true};
  EpisodeInput in;
  in.cancelled = &cancelled;
  Episode ep(client_.get(), EpisodeLimits{}, in);
  Conversation conv("policy");
  Status s = ep.AppendText(conv, SegmentRole::kPrompt, "Q");
  EXPECT_EQ(s.code(), StatusCode::kCancelled);
  EXPECT_EQ(Episode::FailureFrom(s, FailureReason::kEnvError).reason, FailureReason::kCancelled);

  EpisodeInput late;
  late.deadline = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  Episode ep2(client_.get(), EpisodeLimits{}, late);
  Status d = ep2.Check();
  EXPECT_EQ(d.code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(Episode::FailureFrom(d, FailureReason::kEnvError).reason, FailureReason::kTimeout);
  EXPECT_EQ(server_.requests().size(), 0u);
}

// Seconds: the scripted reply is held back for 3 s and torn down at the end.
using RuntimeEpisodeIntegrationTest = RuntimeEpisodeTest;

TEST_F(RuntimeEpisodeIntegrationTest, CancelledWhileAnEndpointIsSlow) {
  Reply slow = Reply::Json(Sampled("a", {5}));
  slow.delay_ms = 3000;
  server_.Script("/v1/completions", {slow});
  std::atomic<bool> cancelled{false};
  EpisodeInput in;
  in.cancelled = &cancelled;
  Episode ep(client_.get(), EpisodeLimits{}, in);
  Conversation conv("policy");
  ASSERT_TRUE(ep.AppendText(conv, SegmentRole::kPrompt, "Q").ok());
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    cancelled = true;
  });
  const auto t0 = std::chrono::steady_clock::now();
  auto t = ep.Generate(conv, {});
  canceller.join();
  EXPECT_EQ(t.status().code(), StatusCode::kCancelled);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(1500));
}

// The segment's version is the adapter that really sampled, as the reply's "model" names it
// (allot serve reports the adapter its engine ran; vLLM the served LoRA name).
TEST(ServedPolicyVersionTest, TheReplysAdapterNameDecides) {
  EXPECT_EQ(ServedPolicyVersion("", 7, "base"), 7u);                // no adapter requested
  EXPECT_EQ(ServedPolicyVersion("policy-v7", 7, ""), 7u);           // the server names none
  EXPECT_EQ(ServedPolicyVersion("policy-v7", 7, "policy-v7"), 7u);  // as requested
  EXPECT_EQ(ServedPolicyVersion("policy-v7", 7, "policy-v8"), 8u);  // a newer one sampled
  EXPECT_EQ(ServedPolicyVersion("policy-v7", 7, "policy-v12"), 12u);
  EXPECT_EQ(ServedPolicyVersion("policy-v7", 7, "Qwen2-7B"), 0u);  // the base model: unknown
  EXPECT_EQ(ServedPolicyVersion("policy-v7", 7, "other-v8"), 0u);  // another policy
  EXPECT_EQ(ServedPolicyVersion("policy-v7", 7, "policy-vx"), 0u);
  // The prefix is the run's name, which may itself end like a version.
  EXPECT_EQ(ServedPolicyVersion("exp-v2-v7", 7, "exp-v2-v9"), 9u);
  EXPECT_EQ(ServedPolicyVersion("exp-v2-v7", 7, "exp-v9"), 0u);  // the run named "exp"
  EXPECT_EQ(ServedPolicyVersion("exp-v7", 7, "exp-v2-v9"), 0u);
}

TEST_F(RuntimeEpisodeTest, PolicySegmentsRecordTheVersionTheEndpointReports) {
  auto reply = [](const std::string& model) {
    nlohmann::json j = nlohmann::json::parse(Sampled("a", {5}));
    j["model"] = model;
    return Reply::Json(j.dump());
  };
  // The episode asked for version 3; the server sampled with 4, then with the base model.
  server_.Script("/v1/completions", {reply("policy-v4"), reply("policy-model")});
  Episode ep(client_.get(), EpisodeLimits{}, input_);
  Conversation conv("policy");
  ASSERT_TRUE(ep.AppendText(conv, SegmentRole::kPrompt, "Q").ok());
  GenerateOptions o;
  o.model = "policy-v3";
  o.policy_version = 3;
  auto t1 = ep.Generate(conv, o);
  ASSERT_TRUE(t1.ok()) << t1.status().ToString();
  EXPECT_EQ(t1->served_model, "policy-v4");
  auto t2 = ep.Generate(conv, o);
  ASSERT_TRUE(t2.ok()) << t2.status().ToString();
  ASSERT_EQ(conv.segments().size(), 3u);
  EXPECT_EQ(conv.segments()[1].policy_version, 4u);
  EXPECT_EQ(conv.segments()[2].policy_version, 0u);
  EXPECT_EQ(Bodies(server_, "/v1/completions")[0]["model"], "policy-v3");
}

// An endpoint with `api: chat` gets text calls as one user message on /v1/chat/completions.
TEST_F(RuntimeEpisodeTest, ChatEndpointsGetTextCallsAsMessages) {
  llm::EndpointConfig chat = testing::ScriptedEndpoint(server_, "hosted");
  chat.api = "chat";
  auto client = llm::Client::Create({testing::ScriptedEndpoint(server_, "policy"), chat});
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  server_.Script("/v1/chat/completions",
                 {Reply::Json(R"({"model":"hosted-model","choices":[{"index":0,"message":)"
                              R"({"role":"assistant","content":"It is 4."},)"
                              R"("finish_reason":"stop"}],)"
                              R"("usage":{"prompt_tokens":12,"completion_tokens":4}})")});
  server_.Script("/v1/completions", {Reply::Json(Sampled("raw", {5}))});
  Episode ep(client->get(), EpisodeLimits{}, input_);
  GenerateOptions o;
  o.role = SegmentRole::kOtherModel;
  auto chat_turn = ep.CompleteText("hosted", "What is 2+2?", o);
  ASSERT_TRUE(chat_turn.ok()) << chat_turn.status().ToString();
  EXPECT_EQ(chat_turn->text, "It is 4.");
  auto raw_turn = ep.CompleteText("policy", "What is 2+2?", o);
  ASSERT_TRUE(raw_turn.ok()) << raw_turn.status().ToString();
  auto chats = Bodies(server_, "/v1/chat/completions");
  ASSERT_EQ(chats.size(), 1u);
  EXPECT_EQ(chats[0]["model"], "hosted-model");
  EXPECT_EQ(chats[0]["messages"],
            nlohmann::json::parse(R"([{"role":"user","content":"What is 2+2?"}])"));
  auto raws = Bodies(server_, "/v1/completions");
  ASSERT_EQ(raws.size(), 1u);
  EXPECT_EQ(raws[0]["prompt"], "What is 2+2?");
  Trajectory traj;
  ep.Finish(traj);
  EXPECT_EQ(traj.usage.by_endpoint.at("hosted").prompt_tokens, 12);
  EXPECT_EQ(traj.usage.by_endpoint.at("policy").calls, 1);
}

TEST(PromptTemplateTest, RendersNamedPlaceholdersAndLeavesLatexAlone) {
  auto r = RenderTemplate("Q: {{question}} as \\boxed{X} ({{n}})",
                          {{"question", "1+1"}, {"n", "3"}}, "t");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "Q: 1+1 as \\boxed{X} (3)");
  auto missing = RenderTemplate("{{question}} {{oops}}", {{"question", "q"}}, "prompts.x");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("{{oops}}"), std::string::npos);
  EXPECT_EQ(TemplatePlaceholders("{{a}} {b} {{c}} {{a}}"), (std::vector<std::string>{"a", "c"}));
}

}  // namespace
}  // namespace allot::envs::runtime
