#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "envs/coger/coger_env.h"
#include "llm/client.h"

namespace allot::envs::coger {
namespace {

// The GRPO learner sends its resolved recipe, which keeps ${VAR} placeholders; the worker that
// builds the env resolves them from its own environment. Before, the placeholder itself reached
// the endpoint pool and every episode failed ("... is not an http:// or https:// URL").
TEST(CogerEnvConfigTest, EnvConfigPlaceholdersResolveInTheWorkersEnvironment) {
  ::setenv("ALLOT_TEST_COGER_ROUTER_URL", "http://127.0.0.1:9", 1);
  std::string recipe = "run: {name: x}\ntrainer: {algorithm: grpo}\n";
  recipe += "env: {name: coger, coger: {lmin: {oracle: dataset}, prompts: {dir: \"" +
            std::string(ALLOT_SOURCE_DIR) + "/configs/prompts/coger\"}}}\n";
  recipe += "tools: {code: false, symbolic: false, statistics: false}\nendpoints:\n";
  recipe += "  - {name: router, model: m, base_url: \"${ALLOT_TEST_COGER_ROUTER_URL:-nope}\"}\n";
  recipe += "  - {name: medium, model: m, base_url: \"${ALLOT_TEST_COGER_UNSET_URL:-";
  recipe += "http://127.0.0.1:10}\"}\n";
  recipe += "  - {name: large, model: m, base_url: \"http://127.0.0.1:11\"}\n";
  auto env = CogerEnv::FromConfigText(recipe);
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  ASSERT_NE((*env)->client().endpoint("router"), nullptr);
  EXPECT_EQ((*env)->client().endpoint("router")->base_url.rfind("http://127.0.0.1:9", 0), 0u);
  EXPECT_EQ((*env)->client().endpoint("medium")->base_url.rfind("http://127.0.0.1:10", 0), 0u);
  ::unsetenv("ALLOT_TEST_COGER_ROUTER_URL");
}

// The grpo engine sends a dataset's extra fields under "extra"; allot eval puts min_level at
// the top. Before, the nested one was ignored, so `lmin.oracle: dataset` had no L_min in
// training and every hierarchy (and total) reward was 0.
TEST(CogerEnvConfigTest, MinLevelIsReadAtTheTopOrUnderExtra) {
  const auto format = rewards::AnswerFormat::kBoxed;
  auto top = ParseCogerItem(R"({"question": "q", "answer": "1", "min_level": 2})", format);
  ASSERT_TRUE(top.ok()) << top.status().ToString();
  EXPECT_EQ(top->min_level, 2);
  auto nested = ParseCogerItem(
      R"({"question": "q", "answer": "1", "extra": {"kind": "fact", "min_level": 4}})", format);
  ASSERT_TRUE(nested.ok()) << nested.status().ToString();
  EXPECT_EQ(nested->min_level, 4);
  EXPECT_FALSE(
      ParseCogerItem(R"({"question": "q", "answer": "1", "extra": {"min_level": "4"}})", format)
          .ok());
}

}  // namespace
}  // namespace allot::envs::coger
