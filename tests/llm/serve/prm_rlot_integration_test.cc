// End to end: the rlot env in a real rollout worker (in-process gRPC channel, the learner's
// Dispatcher) against `allot serve` over real HTTP, which serves both the block LLM
// (/v1/completions) and the PRM (/pooling). A tiny random model writes nonsense, so this
// checks structure only: transitions, states, rewards, accounting.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "core/config/binder.h"
#include "envs/rlot/rlot_env.h"
#include "llm/serve/server.h"
#include "rollout/dispatcher.h"
#include "rollout/worker.h"
#include "tests/llm/serve/serve_fixture.h"

namespace allot::llm::serve {
namespace {

using nlohmann::json;

TEST(RlotServeIntegrationTest, EpisodesThroughARolloutWorkerAgainstAllotServe) {
  const std::string dir = testing::WriteServableTinyModel("rlot_e2e", 3);
  {  // The block prompts are long: give the random model a longer context than the default.
    json config = json::parse(std::ifstream(dir + "/config.json"));
    config["max_position_embeddings"] = 8192;
    std::ofstream(dir + "/config.json") << config.dump(2);
  }
  ServeConfig sc;
  sc.model = dir;
  sc.port = 0;
  sc.served_model_name = "tiny";
  auto server = Server::Create(sc);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto port = (*server)->Start();
  ASSERT_TRUE(port.ok());

  envs::rlot::RlotEnvConfig c;
  EndpointConfig policy;
  policy.name = "policy";
  policy.base_url = (*server)->url();
  policy.model = "tiny";
  EndpointConfig prm = policy;
  prm.name = "prm";
  c.endpoints = {policy, prm};
  c.step_scorer = "prm";
  c.prm.mode = "pooling";
  c.prm.model = "tiny";
  c.prm.max_prompt_tokens = 8000;
  c.max_step_tokens = 6;
  c.max_answer_tokens = 6;
  c.max_check_tokens = 3;
  c.max_eval_tokens = 12;
  c.fail_on_truncation = false;  // a random model always runs to its budget
  c.prompts_dir = std::string(ALLOT_SOURCE_DIR) + "/configs/prompts/rlot";
  const std::string env_config = config::ToYaml(c);

  rollout::EnvRegistry registry;
  envs::rlot::RegisterRlotEnv(registry);
  rollout::WorkerConfig wc;
  wc.worker_id = "w0";
  auto worker = rollout::WorkerServer::Start(wc, &registry, /*in_process=*/true);
  ASSERT_TRUE(worker.ok()) << worker.status().ToString();
  auto dispatcher = rollout::Dispatcher::Create({});
  ASSERT_TRUE(dispatcher.ok()) << dispatcher.status().ToString();
  (*dispatcher)->AddChannel((*worker)->InProcessChannel(), "w0");

  // A random model's block may be empty (an immediate end of text), which the env rejects as
  // a format error; which episodes do depends on how the server happens to batch them. Six
  // episodes, of which at least two must complete and pass the structural checks.
  constexpr int kEpisodes = 6;
  std::vector<v1::EpisodeRequest> requests;
  for (int i = 0; i < kEpisodes; ++i) {
    v1::EpisodeRequest r;
    r.set_episode_id("rlot-" + std::to_string(i));
    r.set_env("rlot");
    r.set_env_config(env_config);
    r.set_dataset_item(R"({"question": "What is 2+3?", "answer": "5"})");
    r.set_epsilon(1.0);  // no navigator published: uniform blocks
    r.set_seed(static_cast<uint64_t>(11 + i));
    requests.push_back(std::move(r));
  }
  ASSERT_TRUE((*dispatcher)->Submit(std::move(requests)).ok());
  int completed = 0;
  for (int i = 0; i < kEpisodes; ++i) {
    auto done = (*dispatcher)->Next(std::chrono::seconds(120));
    ASSERT_TRUE(done.has_value());
    const v1::Trajectory& t = done->trajectory;
    if (t.failure().reason() == v1::FAILURE_REASON_FORMAT_ERROR &&
        t.failure().message().find("is empty") != std::string::npos) {
      continue;  // nonsense the env rejected
    }
    EXPECT_EQ(t.failure().reason(), v1::FAILURE_REASON_NONE) << t.failure().message();
    ++completed;
    ASSERT_GE(t.transitions_size(), 1);
    ASSERT_LE(t.transitions_size(), 6);  // five blocks, then a forced Terminate
    for (int k = 0; k < t.transitions_size(); ++k) {
      const v1::Transition& tr = t.transitions(k);
      EXPECT_EQ(tr.state_size(), 7);
      EXPECT_EQ(tr.num_actions(), 5u);
      EXPECT_LT(tr.action(), 5u);
      EXPECT_EQ(tr.done(), k + 1 == t.transitions_size());
      for (float x : tr.next_state()) EXPECT_TRUE(x >= 0 && x <= 3);
      if (!tr.done()) {  // the PRM's P(+) of the chain so far
        EXPECT_GE(tr.reward(), 0.0f);
        EXPECT_LE(tr.reward(), 1.0f);
      }
    }
    std::vector<std::string> names;
    for (const auto& r : t.rewards()) names.push_back(r.name());
    EXPECT_EQ(names, (std::vector<std::string>{"outcome", "prm"}));
    EXPECT_GT(t.accounting().llm_calls(), 0u);
    EXPECT_GT(t.accounting().prompt_tokens(), 0u);
    EXPECT_FALSE(t.info().at("blocks").empty());
  }
  EXPECT_GE(completed, 2);
  (*dispatcher)->Shutdown();
  (*worker)->Shutdown();
  (*server)->Stop();
}

}  // namespace
}  // namespace allot::llm::serve
