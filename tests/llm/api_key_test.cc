// API keys (llm::ResolveApiKey): an endpoint names the environment variable that holds its key
// (`api_key_env`), and every process that calls it reads the key from its own environment, so
// that a key never travels in a recipe or an env_config and never reaches a log.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>

#include "core/config/binder.h"
#include "llm/client.h"
#include "tests/llm/scripted_server.h"

namespace allot::llm {
namespace {

using testing::CompletionBody;
using testing::Reply;
using testing::ScriptedServer;

GetEnvFn FakeEnv(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

EndpointConfig Endpoint(const std::string& name) {
  EndpointConfig e;
  e.name = name;
  e.base_url = "http://127.0.0.1:1";
  e.model = "m";
  return e;
}

TEST(ResolveApiKeyTest, ReadsTheNamedVariable) {
  EndpointConfig e = Endpoint("deepseek");
  e.api_key_env = "DEEPSEEK_API_KEY";
  ASSERT_TRUE(ResolveApiKey(e, FakeEnv({{"DEEPSEEK_API_KEY", "sk-ds"}})).ok());
  EXPECT_EQ(e.api_key, "sk-ds");
}

TEST(ResolveApiKeyTest, AnUnsetVariableIsAnErrorNamingTheEndpointAndVariable) {
  EndpointConfig e = Endpoint("gpt");
  e.api_key_env = "GPT_KEY";
  Status s = ResolveApiKey(e, FakeEnv({{"OTHER", "sk-other"}}));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("endpoints['gpt'].api_key_env: GPT_KEY"), std::string::npos);
  EXPECT_EQ(s.message().find("sk-other"), std::string::npos);
  e.api_key_env = "BAD NAME";
  EXPECT_EQ(ResolveApiKey(e, FakeEnv({})).code(), StatusCode::kInvalidArgument);
}

TEST(ResolveApiKeyTest, AKeyAndAVariableTogetherIsAnError) {
  EndpointConfig e = Endpoint("gpt");
  e.api_key = "sk-inline";
  e.api_key_env = "GPT_KEY";
  Status s = ResolveApiKey(e, FakeEnv({{"GPT_KEY", "sk-env"}}));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().find("sk-inline"), std::string::npos);
}

TEST(ResolveApiKeyTest, ARedactedKeyFallsBackToTheEndpointsVariableThenOpenAi) {
  EndpointConfig e = Endpoint("my-llm");
  e.api_key = "<redacted>";
  ASSERT_TRUE(
      ResolveApiKey(e, FakeEnv({{"ALLOT_API_KEY_MY_LLM", "sk-own"}, {"OPENAI_API_KEY", "sk-oa"}}))
          .ok());
  EXPECT_EQ(e.api_key, "sk-own");
  e.api_key = "<redacted>";
  ASSERT_TRUE(ResolveApiKey(e, FakeEnv({{"OPENAI_API_KEY", "sk-oa"}})).ok());
  EXPECT_EQ(e.api_key, "sk-oa");
  e.api_key = "<redacted>";
  ASSERT_TRUE(ResolveApiKey(e, FakeEnv({})).ok());
  EXPECT_EQ(e.api_key, "");  // no header rather than a bearer "<redacted>"
  e.api_key = "sk-plain";
  ASSERT_TRUE(ResolveApiKey(e, FakeEnv({{"OPENAI_API_KEY", "sk-oa"}})).ok());
  EXPECT_EQ(e.api_key, "sk-plain");
}

// The client resolves the variable in its own process and sends the key; the key is in no
// printed config and in no error message, even when the server echoes a 401.
TEST(ResolveApiKeyTest, TheClientSendsTheKeyAndNeverPrintsIt) {
  constexpr const char* kVar = "ALLOT_TEST_API_KEY_CLIENT";
  constexpr const char* kKey = "sk-test-7f3a9c1e";
  ASSERT_EQ(setenv(kVar, kKey, 1), 0);
  ScriptedServer server;
  server.Script("/v1/completions",
                {Reply::Json(CompletionBody("ok", {1}, 3)),
                 Reply::Json(R"({"error":{"message":"bad key","type":"auth"}})", 401)});
  EndpointConfig e = Endpoint("hosted");
  e.base_url = server.url();
  e.api_key_env = kVar;
  e.limits.max_attempts = 1;
  const std::string printed = config::ToYaml(e);
  EXPECT_NE(printed.find(kVar), std::string::npos) << printed;
  EXPECT_EQ(printed.find(kKey), std::string::npos) << printed;

  auto client = Client::Create({e});
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  CompletionRequest req;
  req.prompt = "hi";
  auto ok = (*client)->Complete("hosted", req).get();
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  auto denied = (*client)->Complete("hosted", req).get();
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.status().ToString().find(kKey), std::string::npos);
  for (const auto& r : server.requests()) {
    EXPECT_EQ(r.headers.at("authorization"), std::string("Bearer ") + kKey);
  }
  unsetenv(kVar);
  auto unset = Client::Create({e});
  ASSERT_FALSE(unset.ok());
  EXPECT_NE(unset.status().message().find(kVar), std::string::npos);
}

}  // namespace
}  // namespace allot::llm
