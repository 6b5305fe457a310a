// The DeepTool env end to end: `allot serve` running a tiny model over real HTTP, the env inside
// a real rollout worker (gRPC on loopback), a dispatcher collecting the trajectories. The tiny
// model's output is random (and almost never a well-formed step), so this asserts structure,
// not quality: the segments and masks, the step reward, the failure reason.
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "envs/deeptool/deeptool_env.h"
#include "llm/serve/server.h"
#include "rollout/dispatcher.h"
#include "rollout/env_registry.h"
#include "rollout/validate.h"
#include "rollout/worker.h"
#include "tests/llm/serve/serve_fixture.h"

namespace allot::envs::deeptool {
namespace {

using namespace std::chrono_literals;

TEST(DeepToolServeIntegrationTest, StepwiseInstancesThroughAWorkerAgainstAllotServe) {
  llm::serve::ServeConfig sc;
  sc.model = llm::serve::testing::WriteServableTinyModel("deeptool_e2e");
  sc.port = 0;
  sc.served_model_name = "tiny";
  auto server = llm::serve::Server::Create(sc);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  ASSERT_TRUE((*server)->Start().ok());

  DeepToolEnvConfig c;
  llm::EndpointConfig e;
  e.name = "policy";
  e.base_url = (*server)->url();
  e.model = "tiny";
  e.params_b = 0.001;
  c.endpoints.push_back(e);
  // The tiny model's context is 256 byte-level tokens: a short template, same placeholder.
  c.deeptool.prompts.tir = "Solve with <think>/<code>/<answer>: {{question}}\n";
  c.deeptool.mode = "stepwise";
  c.deeptool.step_max_tokens = 8;
  auto env = DeepToolEnv::Create(c);
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  const std::string env_config = (*env)->ConfigText();

  rollout::EnvRegistry registry;
  RegisterDeepToolEnv(registry);
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

  // A step instance as `allot deeptool steps` writes it: one history step, the answer next.
  const std::string item =
      nlohmann::json{
          {"question", "2+3?"},
          {"answer", "5"},
          {"history", {{{"think", "add"}, {"code", "print(2+3)"}, {"observation", "5"}}}},
          {"reference_steps", {{{"think", "ok"}, {"answer", "\\boxed{5}"}}}}}
          .dump();
  const int n = 3;
  for (int i = 0; i < n; ++i) {
    v1::EpisodeRequest req;
    req.set_episode_id("deeptool-" + std::to_string(i));
    req.set_env("deeptool");
    req.set_env_config(env_config);
    req.set_dataset_item(item);
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
    EXPECT_EQ(t.env(), "deeptool");
    // Random bytes are a well-formed step only by a miracle: none or a format error.
    EXPECT_TRUE(t.failure().reason() == v1::FAILURE_REASON_NONE ||
                t.failure().reason() == v1::FAILURE_REASON_FORMAT_ERROR);
    ASSERT_GE(t.segments_size(), 3);
    EXPECT_EQ(t.segments(0).role(), v1::SEGMENT_ROLE_PROMPT);
    EXPECT_FALSE(t.segments(0).trainable());
    EXPECT_EQ(t.segments(1).role(), v1::SEGMENT_ROLE_ENV);  // the ground-truth history
    EXPECT_FALSE(t.segments(1).trainable());
    EXPECT_GT(t.segments(1).ids_size(), 20);
    EXPECT_EQ(t.segments(2).role(), v1::SEGMENT_ROLE_POLICY);
    EXPECT_TRUE(t.segments(2).trainable());
    EXPECT_EQ(t.segments(2).step(), 1u);
    EXPECT_GE(t.segments(2).ids_size(), 1);
    EXPECT_LE(t.segments(2).ids_size(), 8);
    EXPECT_EQ(t.segments(2).logprobs_size(), t.segments(2).ids_size());
    ASSERT_EQ(t.step_rewards_size(), 1);
    EXPECT_GE(t.step_rewards(0), 0.0);
    EXPECT_LE(t.step_rewards(0), 1.0);
    ASSERT_GE(t.rewards_size(), 1);
    EXPECT_EQ(t.rewards(0).name(), "action");
    EXPECT_EQ(t.accounting().llm_calls(), 1u);
    EXPECT_GT(t.accounting().prompt_tokens(), 0u);
  }
}

}  // namespace
}  // namespace allot::envs::deeptool
