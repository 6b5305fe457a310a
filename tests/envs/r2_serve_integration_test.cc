// The R2-Reasoner env end to end: `allot serve` running a tiny model over real HTTP, the env
// inside a real rollout worker (gRPC on loopback), a dispatcher collecting the trajectories; and
// the execution stage (subtasks in order, review, integration) on the same server. The tiny
// model's output is random, so this asserts structure, not quality.
#include <gtest/gtest.h>

#include <chrono>

#include "envs/r2/r2_env.h"
#include "llm/client.h"
#include "llm/serve/server.h"
#include "rollout/dispatcher.h"
#include "rollout/env_registry.h"
#include "rollout/validate.h"
#include "rollout/worker.h"
#include "tests/llm/serve/serve_fixture.h"

namespace allot::envs::r2 {
namespace {

using namespace std::chrono_literals;

class R2ServeIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    llm::serve::ServeConfig sc;
    sc.model = llm::serve::testing::WriteServableTinyModel("r2_e2e");
    sc.port = 0;
    sc.served_model_name = "tiny";
    auto server = llm::serve::Server::Create(sc);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(server).value();
    ASSERT_TRUE(server_->Start().ok());
  }

  R2EnvConfig Config() {
    R2EnvConfig c;
    for (const char* name : {"router", "small", "big"}) {
      llm::EndpointConfig e;
      e.name = name;
      e.base_url = server_->url();
      e.model = "tiny";
      e.params_b = 0.001;
      e.usd_per_m_input = 1.0;
      e.usd_per_m_output = 2.0;
      e.group = std::string(name) == "big" ? "LLM" : "SLM";
      c.endpoints.push_back(e);
    }
    // The tiny model's context is 256 byte-level tokens: short templates, same placeholders.
    R2Prompts& p = c.r2.prompts;
    p.dir = std::string(ALLOT_SOURCE_DIR) + "/configs/prompts/r2";
    p.decomposer = "Split: {{question}}\n";
    p.allocator = "\n{{num_subtasks}} to {{pool}}";
    p.subtask = "{{question}}|{{previous}}|{{index}}:{{subtask}}\n";
    p.integrate = "{{question}}|{{results}}\n";
    p.review = "{{question}}|{{subtask}}={{answer}}?\n";
    c.r2.decomposer_max_tokens = 8;
    c.r2.allocator_max_tokens = 8;
    c.r2.subtask_max_tokens = 8;
    c.r2.integrate_max_tokens = 8;
    c.r2.review = {
        .enabled = true, .strong_model = "big", .threshold_model = "big", .max_tokens = 8};
    c.gpu.tdp_watts = 400;
    return c;
  }

  std::unique_ptr<llm::serve::Server> server_;
};

TEST_F(R2ServeIntegrationTest, EpisodesThroughAWorkerAgainstAllotServe) {
  auto env = R2Env::Create(Config());
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  const std::string env_config = (*env)->ConfigText();

  rollout::EnvRegistry registry;
  RegisterR2Env(registry);
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
    req.set_episode_id("r2-" + std::to_string(i));
    req.set_env("r2");
    req.set_env_config(env_config);
    req.set_dataset_item(R"({"question": "What is 2+3?", "answer": "5"})");
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
    EXPECT_EQ(t.env(), "r2");
    EXPECT_EQ(t.failure().reason(), v1::FAILURE_REASON_NONE);
    // The decomposer's prompt and output always; the allocator's only after a well-formed
    // subtask list (random text rarely is one), then the results as masked context.
    ASSERT_GE(t.segments_size(), 2);
    EXPECT_EQ(t.segments(0).role(), v1::SEGMENT_ROLE_PROMPT);
    EXPECT_FALSE(t.segments(0).trainable());
    EXPECT_EQ(t.segments(1).role(), v1::SEGMENT_ROLE_POLICY);
    EXPECT_TRUE(t.segments(1).trainable());
    EXPECT_EQ(t.segments(1).source(), "decomposer@router");
    EXPECT_GE(t.segments(1).ids_size(), 1);
    EXPECT_LE(t.segments(1).ids_size(), 8);
    EXPECT_EQ(t.segments(1).logprobs_size(), t.segments(1).ids_size());
    for (int i = 2; i < t.segments_size(); ++i) {
      EXPECT_EQ(t.segments(i).trainable(), t.segments(i).source() == "allocator@router") << i;
    }
    ASSERT_EQ(t.rewards_size(), 1);
    EXPECT_EQ(t.rewards(0).name(), "accuracy");
    EXPECT_GE(t.accounting().llm_calls(), 1u);
    EXPECT_GT(t.accounting().prompt_tokens(), 0u);
    EXPECT_TRUE(t.info().count("cost_cents"));
    EXPECT_TRUE(t.info().count("energy_j"));
    EXPECT_GT(std::stod(t.info().at("cost_cents")), 0.0);
  }
}

// Execution (Sec. 4.4 steps 3-4) over real HTTP: one call per subtask in order, a review of the
// subtask below M_thresh, and the integration, every call accounted.
TEST_F(R2ServeIntegrationTest, ExecutionRunsEverySubtaskReviewAndIntegration) {
  auto env = R2Env::Create(Config());
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  runtime::EpisodeInput input;
  runtime::Episode ep(&(*env)->client(), (*env)->config().r2.limits, input);
  Execution ex = (*env)->Execute(ep, "2+3?", {"add", "check"}, {{1, "small"}, {5, "big"}});
  ASSERT_FALSE(ex.failure.failed()) << ex.failure.message;
  ASSERT_EQ(ex.results.size(), 2u);
  EXPECT_EQ(ex.reviewed, (std::vector<bool>{true, false}));
  EXPECT_EQ(ex.integrator, "big");
  EXPECT_EQ(ep.usage().by_endpoint.at("small").calls, 1);
  EXPECT_EQ(ep.usage().by_endpoint.at("big").calls, 3);  // review, subtask 2, integration
  EXPECT_GT(ep.usage().total.energy_j, 0.0);
}

}  // namespace
}  // namespace allot::envs::r2
