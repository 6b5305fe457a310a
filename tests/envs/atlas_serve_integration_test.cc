// The ATLAS env end to end: `allot serve` running a tiny model (orchestrator and solver) over
// real HTTP, the env inside a real rollout worker (gRPC on loopback), a LoRA policy published
// by the dispatcher and loaded into allot serve, a dispatcher collecting the trajectories. The
// tiny model's output is random, so this asserts structure, not quality: the orchestrator's
// turns are trainable segments with log-probs, sampled by the adapter version allot serve
// reports, and whatever the random text asks for ends in a well-formed trajectory.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "envs/atlas/atlas_env.h"
#include "llm/serve/server.h"
#include "rollout/dispatcher.h"
#include "rollout/env_registry.h"
#include "rollout/validate.h"
#include "rollout/worker.h"
#include "tests/llm/serve/serve_fixture.h"

namespace allot::envs::atlas {
namespace {

using namespace std::chrono_literals;

TEST(AtlasServeIntegrationTest, OrchestratorEpisodesThroughAWorkerAgainstAllotServe) {
  llm::serve::ServeConfig sc;
  sc.model = llm::serve::testing::WriteServableTinyModel("atlas_e2e");
  sc.port = 0;
  sc.served_model_name = "tiny";
  auto server = llm::serve::Server::Create(sc);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  Result<int> port = (*server)->Start();
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  // The learner's adapter, as its publisher names it.
  const std::string adapter = llm::serve::testing::WriteAdapter(sc.model, "atlas_v2", false);
  auto loaded = llm::serve::testing::Post(
      *port, "/v1/load_lora_adapter",
      nlohmann::json{{"lora_name", "orchestrator-v2"}, {"lora_path", adapter}});
  ASSERT_EQ(loaded.status, 200) << loaded.body;

  AtlasEnvConfig c;
  for (const char* name : {"orchestrator", "solver"}) {
    llm::EndpointConfig e;
    e.name = name;
    e.base_url = (*server)->url();
    e.model = "tiny";
    e.params_b = 0.001;
    e.usd_per_m_input = 1.0;
    c.endpoints.push_back(e);
  }
  AtlasPrompts& p = c.atlas.prompts;
  p.dir = std::string(ALLOT_SOURCE_DIR) + "/configs/prompts/atlas";
  // The tiny model's context is 256 byte-level tokens: short templates, same placeholders.
  p.orchestrator =
      "{{question}} ({{budget}} {{effort}} {{solvers}}{{effort_guidance}}{{format_instruction}})\n";
  p.effort_medium = "M";
  p.solver = "{{question}} {{effort}} {{strategy}} {{format_instruction}}\n";
  c.atlas.orchestrator_max_tokens = 8;
  c.atlas.effort_tokens = {4, 8, 8};
  c.atlas.max_explore_calls = 2;
  c.atlas.max_malformed_turns = 3;
  c.atlas.observation_reasoning_chars = 16;
  auto env = AtlasEnv::Create(c);
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  const std::string env_config = (*env)->ConfigText();

  rollout::EnvRegistry registry;
  RegisterAtlasEnv(registry);
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
  runtime::PolicySnapshot policy;
  policy.version = 2;
  policy.kind = runtime::PolicySnapshot::Kind::kLoraAdapter;
  policy.adapter_name = "orchestrator-v2";
  policy.adapter_uri = adapter;
  Status published = (*d)->PublishPolicy(policy);
  ASSERT_TRUE(published.ok()) << published.ToString();
  for (int i = 0;
       i < 500 && (!(*worker)->service().policy() || (*worker)->service().policy()->version < 2);
       ++i) {
    std::this_thread::sleep_for(10ms);
  }

  const int n = 3;
  for (int i = 0; i < n; ++i) {
    v1::EpisodeRequest req;
    req.set_episode_id("atlas-" + std::to_string(i));
    req.set_env("atlas");
    req.set_env_config(env_config);
    req.set_dataset_item(R"({"question": "2+3?", "answer": "5"})");
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
    EXPECT_EQ(t.env(), "atlas");
    EXPECT_EQ(t.policy_version(), 2u);
    // Random text is malformed, a cut-off turn, or (rarely) an action: never anything else.
    EXPECT_TRUE(t.failure().reason() == v1::FAILURE_REASON_NONE ||
                t.failure().reason() == v1::FAILURE_REASON_FORMAT_ERROR);
    ASSERT_GE(t.segments_size(), 2);
    EXPECT_EQ(t.segments(0).role(), v1::SEGMENT_ROLE_PROMPT);
    EXPECT_FALSE(t.segments(0).trainable());
    int policy_turns = 0;
    for (const auto& s : t.segments()) {
      if (s.role() != v1::SEGMENT_ROLE_POLICY) {
        EXPECT_FALSE(s.trainable());
        continue;
      }
      ++policy_turns;
      EXPECT_TRUE(s.trainable());
      EXPECT_GE(s.ids_size(), 1);
      EXPECT_LE(s.ids_size(), 8);
      EXPECT_EQ(s.logprobs_size(), s.ids_size());
      // allot serve reports the adapter that sampled: "orchestrator-v2" -> version 2.
      EXPECT_EQ(s.policy_version(), 2u);
    }
    EXPECT_GE(policy_turns, 1);
    EXPECT_LE(t.accounting().tool_calls(), 2u);  // the explore budget
    EXPECT_GE(t.accounting().llm_calls(), 1u);
    EXPECT_GT(t.accounting().prompt_tokens(), 0u);
    EXPECT_TRUE(t.info().count("explore_calls"));
  }
}

}  // namespace
}  // namespace allot::envs::atlas
