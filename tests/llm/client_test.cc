#include "llm/client.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/llm/scripted_server.h"

namespace allot::llm {
namespace {

using json = nlohmann::json;
using testing::CompletionBody;
using testing::Reply;
using testing::ScriptedServer;
using testing::SseEvent;
using Clock = std::chrono::steady_clock;

const std::string kOk = CompletionBody("fine", {1, 2, 3}, 7);

EndpointConfig Endpoint(const ScriptedServer& s, const std::string& name = "policy") {
  EndpointConfig e;
  e.name = name;
  e.base_url = s.url() + "/v1/";
  e.model = "test-model";
  e.params_b = 1.5;
  e.usd_per_m_input = 1.0;
  e.usd_per_m_output = 2.0;
  e.limits.backoff_initial_s = 0.01;
  e.limits.backoff_max_s = 0.05;
  e.limits.timeout_s = 5;
  e.limits.deadline_s = 10;
  return e;
}

std::unique_ptr<Client> MakeClient(std::vector<EndpointConfig> eps) {
  auto c = Client::Create(std::move(eps));
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return std::move(c).value();
}

CompletionRequest Prompt(const std::string& text) {
  CompletionRequest r;
  r.prompt = text;
  return r;
}

TEST(ClientTest, TokenIdPromptAndLogprobsRoundTripWithAccounting) {
  ScriptedServer server;
  const std::vector<int64_t> prompt = {151644, 872, 198, 17, 10, 17, 30};
  const std::vector<int64_t> out = {19, 151645};
  const std::vector<double> lps = {-0.0123456789012345, -1e-7};
  std::atomic<bool> auth_ok{false};
  // The vectors are copied into the handler: they are destroyed before the server, whose
  // connection threads would otherwise read them without any ordering TSan can see.
  server.SetHandler([&auth_ok, prompt, out, lps](const testing::ServerRequest& req) {
    json in = json::parse(req.body);
    auth_ok =
        req.headers.count("authorization") && req.headers.at("authorization") == "Bearer sk-test";
    if (in["prompt"].get<std::vector<int64_t>>() != prompt) return Reply::Json("{}", 400);
    json body = {{"choices",
                  {{{"index", 0},
                    {"text", "4"},
                    {"finish_reason", "stop"},
                    {"logprobs",
                     {{"tokens", {"token_id:19", "token_id:151645"}}, {"token_logprobs", lps}}}}}},
                 {"usage", {{"prompt_tokens", prompt.size()}, {"completion_tokens", out.size()}}}};
    return Reply::Json(body.dump());
  });
  auto ep = Endpoint(server);
  ep.api_key = "sk-test";
  auto client = MakeClient({ep});
  CompletionRequest req;
  req.prompt_token_ids = prompt;
  req.params.logprobs = 1;
  req.params.return_tokens_as_token_ids = true;
  auto r = client->Complete("policy", req).get();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(auth_ok);
  EXPECT_EQ(r->choices[0].token_ids, out);
  EXPECT_EQ(r->choices[0].logprobs[0].logprob, lps[0]);
  EXPECT_EQ(r->choices[0].logprobs[1].logprob, lps[1]);
  EXPECT_EQ(r->record.prompt_tokens, 7);
  EXPECT_EQ(r->record.completion_tokens, 2);
  EXPECT_EQ(r->record.attempts, 1);
  EXPECT_DOUBLE_EQ(r->record.cost_usd, (7 * 1.0 + 2 * 2.0) / 1e6);
  EXPECT_DOUBLE_EQ(r->record.energy_j, 2 * 1.5e9 * 9 * 400.0 / 312e12);
  EXPECT_EQ(client->usage().total.calls, 1);
  EXPECT_DOUBLE_EQ(client->usage().by_endpoint["policy"].energy_j, r->record.energy_j);
}

TEST(ClientTest, RetriesOn503And500ThenSucceeds) {
  ScriptedServer server;
  server.Script("/v1/completions",
                {Reply::Json("busy", 503), Reply::Json("oops", 500), Reply::Json(kOk)});
  auto client = MakeClient({Endpoint(server)});
  auto r = client->Complete("policy", Prompt("x")).get();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->record.attempts, 3);
  EXPECT_EQ(server.request_count("/v1/completions"), 3);
  EXPECT_EQ(client->usage().total.retries, 2);
}

TEST(ClientTest, Honours429RetryAfter) {
  ScriptedServer server;
  Reply limited = Reply::Json(R"({"error":"rate"})", 429);
  limited.headers = {"Retry-After: 0.3"};
  server.Script("/v1/completions", {limited, Reply::Json(kOk)});
  auto client = MakeClient({Endpoint(server)});
  const auto t0 = Clock::now();
  auto r = client->Complete("policy", Prompt("x")).get();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_GE(std::chrono::duration<double>(Clock::now() - t0).count(), 0.29);
  EXPECT_EQ(r->record.attempts, 2);
}

TEST(ClientTest, RetryAfterBeyondLimitGivesUp) {
  ScriptedServer server;
  Reply limited = Reply::Json("{}", 429);
  limited.headers = {"Retry-After: 3600"};
  server.Script("/v1/completions", {limited});
  auto client = MakeClient({Endpoint(server)});
  auto r = client->Complete("policy", Prompt("x")).get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(r.status().message().find("Retry-After"), std::string::npos) << r.status().message();
}

TEST(ClientTest, NoRetryOn4xx) {
  ScriptedServer server;
  server.Script("/v1/completions", {Reply::Json(R"({"error":"bad max_tokens"})", 400)});
  server.Script("/v1/chat/completions", {Reply::Json("{}", 401)});
  auto client = MakeClient({Endpoint(server)});
  auto r = client->Complete("policy", Prompt("x")).get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("llm endpoint 'policy'"), std::string::npos);
  EXPECT_NE(r.status().message().find("bad max_tokens"), std::string::npos);
  EXPECT_EQ(server.request_count("/v1/completions"), 1);
  ChatRequest chat;
  chat.messages = {{"user", "hi"}};
  auto c = client->Chat("policy", chat).get();
  EXPECT_EQ(c.status().code(), StatusCode::kPermissionDenied);
}

TEST(ClientTest, GivesUpAfterMaxAttempts) {
  ScriptedServer server;
  server.SetHandler([](const testing::ServerRequest&) { return Reply::Json("down", 500); });
  auto ep = Endpoint(server);
  ep.limits.max_attempts = 3;
  auto client = MakeClient({ep});
  auto r = client->Complete("policy", Prompt("x")).get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("gave up after 3 attempts"), std::string::npos)
      << r.status().message();
  EXPECT_EQ(server.request_count("/v1/completions"), 3);
  EXPECT_EQ(client->usage().total.failed_calls, 1);
}

TEST(ClientTest, RetriesDroppedConnection) {
  ScriptedServer server;
  Reply drop;
  drop.fault = Reply::Fault::kDrop;
  server.Script("/v1/completions", {drop, Reply::Json(kOk)});
  auto client = MakeClient({Endpoint(server)});
  auto r = client->Complete("policy", Prompt("x")).get();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->record.attempts, 2);
}

TEST(ClientTest, RetriesAttemptTimeout) {
  ScriptedServer server;
  Reply slow = Reply::Json(kOk);
  slow.delay_ms = 600;
  server.Script("/v1/completions", {slow, Reply::Json(kOk)});
  auto ep = Endpoint(server);
  ep.limits.timeout_s = 0.15;
  auto client = MakeClient({ep});
  auto r = client->Complete("policy", Prompt("x")).get();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->record.attempts, 2);
}

TEST(ClientTest, DeadlineCapsTotalTime) {
  ScriptedServer server;
  server.SetHandler([](const testing::ServerRequest&) {
    Reply r = Reply::Json(kOk);
    r.delay_ms = 400;
    return r;
  });
  auto ep = Endpoint(server);
  ep.limits.timeout_s = 0.1;
  ep.limits.max_attempts = 100;
  auto client = MakeClient({ep});
  CallOptions opt;
  opt.deadline_s = 0.35;
  const auto t0 = Clock::now();
  auto r = client->Complete("policy", Prompt("x"), opt).get();
  const double took = std::chrono::duration<double>(Clock::now() - t0).count();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded) << r.status().ToString();
  EXPECT_LT(took, 0.6);
  EXPECT_NE(r.status().message().find("llm endpoint 'policy'"), std::string::npos)
      << r.status().message();
}

TEST(ClientTest, TruncatedAndMalformedBodiesAreErrorsNotRetried) {
  ScriptedServer server;
  Reply cut = Reply::Json(R"({"choices":[{"text":"ab)");  // well-framed, broken JSON
  Reply bad_type = Reply::Json(R"({"choices":[{"text":["a"]}]})");
  Reply utf8 = Reply::Json("{\"choices\":[{\"text\":\"\xc3\x28\"}]}");
  Reply none = Reply::Json(R"({"object":"text_completion"})");
  server.Script("/v1/completions", {cut, bad_type, utf8, none});
  auto client = MakeClient({Endpoint(server)});
  const char* expected[] = {"not valid JSON", "choices[0].text: expected a string",
                            "not valid UTF-8", "choices: missing"};
  for (const char* want : expected) {
    auto r = client->Complete("policy", Prompt("x")).get();
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
    EXPECT_NE(r.status().message().find("llm endpoint 'policy'"), std::string::npos);
    EXPECT_NE(r.status().message().find(want), std::string::npos) << r.status().message();
  }
  EXPECT_EQ(server.request_count("/v1/completions"), 4);
}

TEST(ClientTest, ShortBodyAgainstContentLengthIsTransportErrorAndRetried) {
  ScriptedServer server;
  Reply trunc = Reply::Json(kOk);
  trunc.fault = Reply::Fault::kTruncate;
  server.Script("/v1/completions", {trunc, Reply::Json(kOk)});
  auto client = MakeClient({Endpoint(server)});
  auto r = client->Complete("policy", Prompt("x")).get();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->record.attempts, 2);
}

TEST(ClientTest, BodyOverSizeLimitIsResourceExhausted) {
  ScriptedServer server;
  server.Script("/v1/completions", {Reply::Json(CompletionBody(std::string(10000, 'a'), {1}, 1))});
  auto ep = Endpoint(server);
  ep.limits.max_response_bytes = 4096;
  auto client = MakeClient({ep});
  auto r = client->Complete("policy", Prompt("x")).get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(r.status().message().find("4096 bytes"), std::string::npos) << r.status().message();
}

TEST(ClientTest, BreakerOpensFailsFastAndClosesAfterHealthyProbe) {
  ScriptedServer server;
  server.Script("/v1/completions", {Reply::Json("x", 500), Reply::Json("x", 503)});
  auto ep = Endpoint(server);
  ep.limits.max_attempts = 1;
  ep.limits.breaker_failures = 2;
  ep.limits.breaker_cooldown_s = 0.2;
  auto client = MakeClient({ep});
  EXPECT_FALSE(client->Complete("policy", Prompt("a")).get().ok());
  EXPECT_FALSE(client->Complete("policy", Prompt("b")).get().ok());
  EXPECT_TRUE(client->stats("policy").breaker_open);
  auto fast = client->Complete("policy", Prompt("c")).get();
  ASSERT_FALSE(fast.ok());
  EXPECT_EQ(fast.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(fast.status().message().find("circuit breaker open"), std::string::npos);
  EXPECT_EQ(server.request_count("/v1/completions"), 2);  // failed fast, never sent

  // After the cooldown a failed probe keeps it open...
  server.Script("/health", {Reply::Json("", 503), Reply::Json("")});
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  auto still = client->Complete("policy", Prompt("d")).get();
  ASSERT_FALSE(still.ok());
  EXPECT_NE(still.status().message().find("/health probe failed"), std::string::npos);
  // ...and a healthy probe closes it; the waiting request then goes through.
  server.SetHandler([](const testing::ServerRequest&) { return Reply::Json(kOk); });
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  auto ok = client->Complete("policy", Prompt("e")).get();
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(server.request_count("/health"), 2);
  EXPECT_FALSE(client->stats("policy").breaker_open);
  EXPECT_EQ(client->stats("policy").breaker_opened, 1);
}

TEST(ClientTest, ConnectionRefusedIsUnavailableAfterRetries) {
  int port;
  {
    ScriptedServer gone;
    port = gone.port();
  }
  EndpointConfig ep;
  ep.name = "dead";
  ep.base_url = "http://127.0.0.1:" + std::to_string(port);
  ep.model = "m";
  ep.limits.max_attempts = 2;
  ep.limits.backoff_initial_s = 0.01;
  auto client = MakeClient({ep});
  auto r = client->Complete("dead", Prompt("x")).get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("llm endpoint 'dead'"), std::string::npos);
  EXPECT_EQ(r.status().message().find("127.0.0.1:" + std::to_string(port)) == std::string::npos,
            false);
}

TEST(ClientTest, ConcurrencyLimitQueuesExcessRequests) {
  ScriptedServer server;
  server.SetHandler([](const testing::ServerRequest&) {
    Reply r = Reply::Json(kOk);
    r.delay_ms = 50;
    return r;
  });
  auto ep = Endpoint(server);
  ep.limits.max_concurrency = 2;
  auto client = MakeClient({ep});
  std::vector<std::future<Result<Completion>>> fs;
  for (int i = 0; i < 8; ++i) fs.push_back(client->Complete("policy", Prompt("x")));
  for (auto& f : fs) EXPECT_TRUE(f.get().ok());
  EXPECT_LE(server.max_concurrent(), 2);
  EXPECT_EQ(server.max_concurrent(), 2);
}

TEST(ClientTest, TokenBucketPacesRequests) {
  ScriptedServer server;
  server.SetHandler([](const testing::ServerRequest&) { return Reply::Json(kOk); });
  auto ep = Endpoint(server);
  ep.limits.requests_per_s = 20;
  ep.limits.burst = 1;
  auto client = MakeClient({ep});
  const auto t0 = Clock::now();
  std::vector<std::future<Result<Completion>>> fs;
  for (int i = 0; i < 6; ++i) fs.push_back(client->Complete("policy", Prompt("x")));
  for (auto& f : fs) EXPECT_TRUE(f.get().ok());
  // 1 at once, then 5 more at 20/s.
  EXPECT_GE(std::chrono::duration<double>(Clock::now() - t0).count(), 0.24);
}

Reply StreamReply(bool cut) {
  Reply r;
  r.fault = cut ? Reply::Fault::kStreamCut : Reply::Fault::kStream;
  r.chunk_delay_ms = 20;
  r.chunks = {SseEvent(R"({"choices":[{"index":0,"text":"The ","token_ids":[785]}]})"),
              SseEvent(R"({"choices":[{"index":0,"text":"answer","token_ids":[4226]}]})"),
              SseEvent(R"({"choices":[{"index":0,"text":"","finish_reason":"stop"}]})")};
  if (!cut) {
    r.chunks.push_back(
        SseEvent(R"({"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}})"));
    r.chunks.push_back(SseEvent("[DONE]"));
  }
  return r;
}

TEST(ClientTest, StreamsChunksInOrder) {
  ScriptedServer server;
  server.Script("/v1/completions", {StreamReply(false)});
  auto client = MakeClient({Endpoint(server)});
  std::vector<std::string> pieces;
  CallOptions opt;
  opt.on_chunk = [&](const StreamChunk& c) { pieces.push_back(c.text); };
  auto r = client->Complete("policy", Prompt("q"), opt).get();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(pieces, (std::vector<std::string>{"The ", "answer", ""}));
  EXPECT_EQ(r->choices[0].text, "The answer");
  EXPECT_EQ(r->choices[0].token_ids, (std::vector<int64_t>{785, 4226}));
  EXPECT_EQ(r->choices[0].finish_reason, "stop");
  EXPECT_EQ(r->usage.completion_tokens, 2);
  json sent = json::parse(server.requests()[0].body);
  EXPECT_EQ(sent["stream"], true);
}

TEST(ClientTest, CutStreamIsAnErrorAndNotRetriedAfterChunks) {
  ScriptedServer server;
  server.Script("/v1/completions", {StreamReply(true), Reply::Json(kOk)});
  auto client = MakeClient({Endpoint(server)});
  int chunks = 0;
  CallOptions opt;
  opt.on_chunk = [&](const StreamChunk&) { ++chunks; };
  auto r = client->Complete("policy", Prompt("q"), opt).get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(chunks, 3);
  EXPECT_EQ(server.request_count("/v1/completions"), 1);
}

TEST(ClientTest, MalformedStreamChunkAborts) {
  ScriptedServer server;
  Reply r;
  r.fault = Reply::Fault::kStream;
  r.chunks = {SseEvent(R"({"choices":[{"index":0,"text":7}]})"), SseEvent("[DONE]")};
  server.Script("/v1/completions", {r});
  auto client = MakeClient({Endpoint(server)});
  CallOptions opt;
  opt.on_chunk = [](const StreamChunk&) {};
  auto res = client->Complete("policy", Prompt("q"), opt).get();
  ASSERT_FALSE(res.ok());
  EXPECT_EQ(res.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(res.status().message().find("choices[0].text"), std::string::npos);
}

TEST(ClientTest, ManagementEndpoints) {
  ScriptedServer server;
  server.Script("/v1/models", {Reply::Json(R"({"data":[{"id":"test-model"}]})")});
  server.Script("/health", {Reply::Json("")});
  server.Script("/tokenize", {Reply::Json(R"({"tokens":[9707,1879],"count":2})")});
  server.Script("/detokenize", {Reply::Json(R"({"prompt":"Hello world"})")});
  server.Script("/v1/load_lora_adapter", {Reply::Json("Success")});
  server.Script("/v1/unload_lora_adapter", {Reply::Json("", 404)});
  auto client = MakeClient({Endpoint(server)});
  auto models = client->Models("policy").get();
  ASSERT_TRUE(models.ok()) << models.status().ToString();
  EXPECT_EQ((*models)[0].id, "test-model");
  EXPECT_TRUE(client->Health("policy").get().ok());
  auto ids = client->Tokenize("policy", "Hello world").get();
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int64_t>{9707, 1879}));
  auto text = client->Detokenize("policy", *ids).get();
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "Hello world");
  EXPECT_TRUE(client->LoadLoraAdapter("policy", {"step-10", "/ckpt/step-10", true}).get().ok());
  Status unload = client->UnloadLoraAdapter("policy", "step-9").get();
  EXPECT_EQ(unload.code(), StatusCode::kNotFound);
  auto reqs = server.requests();
  json load;
  json detok;
  for (const auto& r : reqs) {
    if (r.path == "/v1/load_lora_adapter") load = json::parse(r.body);
    if (r.path == "/detokenize") detok = json::parse(r.body);
  }
  EXPECT_EQ(load["lora_name"], "step-10");
  EXPECT_EQ(load["load_inplace"], true);
  EXPECT_EQ(detok["tokens"].get<std::vector<int64_t>>(), (std::vector<int64_t>{9707, 1879}));
}

TEST(ClientTest, UnknownEndpointIsNotFound) {
  ScriptedServer server;
  auto client = MakeClient({Endpoint(server, "small"), Endpoint(server, "large")});
  auto r = client->Complete("medium", Prompt("x")).get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("known: small, large"), std::string::npos);
}

TEST(ClientTest, RejectsBadPoolConfig) {
  EndpointConfig a;
  a.name = "x";
  a.base_url = "http://h";
  a.model = "m";
  auto dup = Client::Create({a, a});
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.status().message().find("duplicate endpoint name 'x'"), std::string::npos);
}

TEST(ClientTest, DestroyingClientCancelsPendingCalls) {
  ScriptedServer server;
  server.SetHandler([](const testing::ServerRequest&) {
    Reply r = Reply::Json(kOk);
    r.delay_ms = 400;
    return r;
  });
  auto client = MakeClient({Endpoint(server)});
  auto f = client->Complete("policy", Prompt("x"));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  client.reset();
  auto r = f.get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCancelled);
}

int64_t RssBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

TEST(ClientIntegrationTest, TwoThousandConcurrentRequestsCompleteCorrectly) {
  ScriptedServer server;
  server.SetHandler([](const testing::ServerRequest& req) {
    json in = json::parse(req.body, nullptr, false);
    Reply r = Reply::Json(CompletionBody("echo:" + in.value("prompt", std::string()), {1, 2}, 3));
    r.delay_ms = 500;  // holds every request open so they really are concurrent
    return r;
  });
  auto ep = Endpoint(server);
  ep.limits.max_concurrency = 2000;
  auto client = MakeClient({ep});
  const int64_t rss0 = RssBytes();
  constexpr int kN = 2000;
  std::vector<std::future<Result<Completion>>> fs;
  fs.reserve(kN);
  for (int i = 0; i < kN; ++i)
    fs.push_back(client->Complete("policy", Prompt("q" + std::to_string(i))));
  int ok = 0;
  for (int i = 0; i < kN; ++i) {
    auto r = fs[i].get();
    ASSERT_TRUE(r.ok()) << i << ": " << r.status().ToString();
    ASSERT_EQ(r->choices[0].text, "echo:q" + std::to_string(i));
    ++ok;
  }
  EXPECT_EQ(ok, kN);
  EXPECT_GE(server.max_concurrent(), kN / 4);  // timing-dependent on a loaded machine
  // Client and the thread-per-connection test server together.
  const int64_t grew = RssBytes() - rss0;
  EXPECT_LT(grew, 300ll << 20) << "RSS grew by " << (grew >> 20) << " MiB";
  RecordProperty("rss_growth_mib", static_cast<int>(grew >> 20));
  EXPECT_EQ(client->usage().total.calls, kN);
  EXPECT_EQ(client->usage().total.completion_tokens, 2 * kN);
}

}  // namespace
}  // namespace allot::llm
