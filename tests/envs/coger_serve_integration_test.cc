// The CogER env end to end: `allot serve` running a tiny model over real HTTP, the env inside a
// real rollout worker (gRPC on loopback), a dispatcher collecting the trajectory. The tiny
// model's output is random, so this asserts structure, not quality.
#include <gtest/gtest.h>

#include <chrono>

#include "envs/coger/coger_env.h"
#include "llm/client.h"
#include "llm/serve/server.h"
#include "rollout/dispatcher.h"
#include "rollout/env_registry.h"
#include "rollout/validate.h"
#include "rollout/worker.h"
#include "tests/llm/serve/serve_fixture.h"

namespace allot::envs::coger {
namespace {

using namespace std::chrono_literals;

TEST(CogerServeIntegrationTest, RouterEpisodeThroughAWorkerAgainstAllotServe) {
  llm::serve::ServeConfig sc;
  sc.model = llm::serve::testing::WriteServableTinyModel("coger_e2e");
  sc.port = 0;
  sc.served_model_name = "tiny";
  auto server = llm::serve::Server::Create(sc);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  ASSERT_TRUE((*server)->Start().ok());

  CogerEnvConfig c;
  for (const char* name : {"router", "medium", "large"}) {
    llm::EndpointConfig e;
    e.name = name;
    e.base_url = (*server)->url();
    e.model = "tiny";
    e.params_b = 0.001;
    c.endpoints.push_back(e);
  }
  c.coger.prompts.dir = std::string(ALLOT_SOURCE_DIR) + "/configs/prompts/coger";
  // The tiny model's context is 256 byte-level tokens: short templates, same placeholders.
  c.coger.prompts.router = "Level of: {{question}}\n";
  c.coger.prompts.l2_cot = "Think: {{question}}\n";
  c.coger.prompts.l3_reasoning = "Reason: {{question}}\n";
  c.coger.prompts.cotool = "Tools ({{max_tool_calls}}): {{question}}\n";
  c.coger.prompts.reason_in_tool = "{{question}} {{tool_query}} -> {{tool_output}}\n";
  c.coger.lmin.oracle = "dataset";
  c.coger.router_max_tokens = 8;
  c.coger.l2.max_tokens = 8;
  c.coger.l3.max_tokens = 8;
  c.coger.cotool.model.max_tokens = 8;
  c.coger.cotool.selector = "rules";
  c.tools.code = false;
  auto env = CogerEnv::Create(c);
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  const std::string env_config = (*env)->ConfigText();

  rollout::EnvRegistry registry;
  RegisterCogerEnv(registry);
  rollout::WorkerConfig wc;
  wc.listen = "127.0.0.1:0";
  wc.metrics_listen = "";
  wc.threads = 2;
  auto worker = rollout::WorkerServer::Start(wc, &registry);
  ASSERT_TRUE(worker.ok()) << worker.status().ToString();
  rollout::DispatcherConfig dc;
  dc.heartbeat_interval_ms = 100;
  auto d = rollout::Dispatcher::Create(dc);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_TRUE((*d)->AddWorker((*worker)->address()).ok());
  ASSERT_TRUE((*d)->WaitForWorkers(1, 10s));

  const int n = 3;
  for (int i = 0; i < n; ++i) {
    v1::EpisodeRequest req;
    req.set_episode_id("coger-" + std::to_string(i));
    req.set_env("coger");
    req.set_env_config(env_config);
    req.set_dataset_item(R"({"question": "What is 2+3?", "answer": "5", "min_level": 2})");
    req.mutable_sampling()->set_temperature(1.0f);
    req.mutable_sampling()->set_seed(static_cast<uint64_t>(i + 1));
    req.set_timeout_ms(60000);
    ASSERT_TRUE((*d)->Submit(req).ok());
  }
  std::vector<rollout::FinishedEpisode> done;
  const auto until = std::chrono::steady_clock::now() + 120s;
  while (static_cast<int>(done.size()) < n && std::chrono::steady_clock::now() < until) {
    if (auto f = (*d)->Next(100ms)) done.push_back(std::move(*f));
  }
  (*d)->Shutdown();
  (*worker)->Shutdown();
  ASSERT_EQ(static_cast<int>(done.size()), n);
  for (const auto& f : done) {
    const v1::Trajectory& t = f.trajectory;
    SCOPED_TRACE(t.episode_id() + ": " + t.failure().message());
    EXPECT_TRUE(rollout::ValidateTrajectory(t).ok());
    EXPECT_EQ(t.env(), "coger");
    // Any downstream call hits the same tiny server; nothing fails.
    EXPECT_EQ(t.failure().reason(), v1::FAILURE_REASON_NONE);
    ASSERT_EQ(t.segments_size(), 2);
    EXPECT_EQ(t.segments(0).role(), v1::SEGMENT_ROLE_PROMPT);
    EXPECT_FALSE(t.segments(0).trainable());
    EXPECT_GT(t.segments(0).ids_size(), 20);
    EXPECT_EQ(t.segments(1).role(), v1::SEGMENT_ROLE_POLICY);
    EXPECT_TRUE(t.segments(1).trainable());
    EXPECT_GE(t.segments(1).ids_size(), 1);
    EXPECT_LE(t.segments(1).ids_size(), 8);
    EXPECT_EQ(t.segments(1).logprobs_size(), t.segments(1).ids_size());
    ASSERT_EQ(t.rewards_size(), 3);
    EXPECT_EQ(t.rewards(0).name(), "format");
    EXPECT_EQ(t.rewards(1).name(), "accuracy");
    EXPECT_EQ(t.rewards(2).name(), "hierarchy");
    EXPECT_GE(t.accounting().llm_calls(), 1u);
    EXPECT_GT(t.accounting().prompt_tokens(), 0u);
    ASSERT_GE(t.accounting().endpoints_size(), 1);
    EXPECT_TRUE(t.info().count("level"));
  }
}

}  // namespace
}  // namespace allot::envs::coger
