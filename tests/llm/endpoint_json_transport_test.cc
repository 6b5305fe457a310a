#include "llm/endpoint_json_transport.h"

#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "tests/llm/scripted_server.h"

namespace allot::llm {
namespace {

using json = nlohmann::json;
using testing::Reply;
using testing::ScriptedServer;

std::shared_ptr<HttpTransport> Http() {
  auto http = HttpTransport::Create({});
  EXPECT_TRUE(http.ok()) << http.status().ToString();
  return std::shared_ptr<HttpTransport>(std::move(*http));
}

EndpointConfig Endpoint(const ScriptedServer& s) {
  EndpointConfig e;
  e.name = "prm";
  e.base_url = s.url() + "/v1/";
  e.model = "math-prm";
  e.api_key = "k-123";
  e.params_b = 7.0;
  e.usd_per_m_input = 2.0;
  e.usd_per_m_output = 4.0;
  return e;
}

TEST(EndpointJsonTransportTest, PostsToTheServerRootWithTheKeyAndReturnsTheReply) {
  ScriptedServer server;
  server.Script("/pooling", {Reply::Json(R"({"data":[[0.75,0.25]]})")});
  JsonTransport post = EndpointJsonTransport(Http(), Endpoint(server), 5.0);
  auto reply = post("/pooling", json{{"model", "math-prm"}, {"input", "Step 1"}});
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ((*reply)["data"][0][0], 0.75);
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);  // "/v1/" dropped: /pooling, not /v1/pooling
  EXPECT_EQ(requests[0].method, "POST");
  EXPECT_EQ(requests[0].path, "/pooling");
  EXPECT_EQ(requests[0].headers.at("authorization"), "Bearer k-123");
  EXPECT_EQ(json::parse(requests[0].body), (json{{"model", "math-prm"}, {"input", "Step 1"}}));
}

TEST(EndpointJsonTransportTest, AnErrorStatusNamesTheUrlAndTheServersMessage) {
  ScriptedServer server;
  server.Script("/pooling", {Reply::Json(R"({"error":{"message":"prm overloaded"}})", 503)});
  auto reply = EndpointJsonTransport(Http(), Endpoint(server), 5.0)("/pooling", json::object());
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(reply.status().message().find(server.url() + "/pooling"), std::string::npos);
  EXPECT_NE(reply.status().message().find("HTTP 503: prm overloaded"), std::string::npos)
      << reply.status().ToString();
}

TEST(EndpointJsonTransportTest, AReplyThatIsNotJsonIsDataLoss) {
  ScriptedServer server;
  Reply r;
  r.body = "<html>busy</html>";
  r.content_type = "text/html";
  server.Script("/classify", {r});
  auto reply = EndpointJsonTransport(Http(), Endpoint(server), 5.0)("/classify", json::object());
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(reply.status().message().find(server.url() + "/classify"), std::string::npos);
}

TEST(EndpointJsonTransportTest, AnUnreachableServerIsUnavailableNamingTheUrl) {
  EndpointConfig e;
  e.name = "prm";
  e.base_url = "http://127.0.0.1:1";  // nothing listens on port 1
  auto reply = EndpointJsonTransport(Http(), e, 5.0)("/pooling", json::object());
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(reply.status().message().find("http://127.0.0.1:1/pooling"), std::string::npos);
}

TEST(EndpointJsonTransportTest, RecordsEachScoringCallPricedButNotTokenize) {
  ScriptedServer server;
  server.Script("/pooling",
                {Reply::Json(R"({"data":[],"usage":{"prompt_tokens":40,"completion_tokens":3}})"),
                 Reply::Json(R"({"error":{"message":"down"}})", 500)});
  server.Script("/tokenize", {Reply::Json(R"({"count":12,"usage":{"prompt_tokens":12}})")});
  std::vector<CallRecord> calls;
  GpuProfile gpu;
  JsonTransport post = EndpointJsonTransport(
      Http(), Endpoint(server), 5.0, [&calls](const CallRecord& c) { calls.push_back(c); }, gpu);
  ASSERT_TRUE(post("/pooling", json::object()).ok());
  ASSERT_TRUE(post("/tokenize", json::object()).ok());
  EXPECT_FALSE(post("/pooling", json::object()).ok());
  ASSERT_EQ(calls.size(), 2u);  // the /tokenize call runs no model and is not accounted
  EXPECT_EQ(calls[0].endpoint, "prm");
  EXPECT_TRUE(calls[0].ok);
  EXPECT_EQ(calls[0].attempts, 1);
  EXPECT_EQ(calls[0].prompt_tokens, 40);
  EXPECT_EQ(calls[0].completion_tokens, 3);
  EXPECT_NEAR(calls[0].cost_usd, (40 * 2.0 + 3 * 4.0) / 1e6, 1e-12);
  EXPECT_NEAR(calls[0].energy_j, 2.0 * 7e9 * 43 * gpu.JoulesPerFlop(), 1e-9);
  EXPECT_GT(calls[0].latency_s, 0.0);
  EXPECT_FALSE(calls[1].ok);  // a failed call counts as failed, with no tokens
  EXPECT_EQ(calls[1].prompt_tokens, 0);
}

}  // namespace
}  // namespace allot::llm
