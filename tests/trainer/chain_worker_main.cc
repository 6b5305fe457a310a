// A rollout worker process with the "chain" env, for the DQN actor/learner tests:
// allot_trainer_test_worker '<worker config YAML>'.
#include <cstdio>

#include "core/config/binder.h"
#include "core/config/node.h"
#include "envs/synthetic/chain_env.h"
#include "rollout/worker.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s '<worker config YAML>'\n", argv[0]);
    return 2;
  }
  auto node = allot::config::ParseYaml(argv[1], "<argv>");
  allot::rollout::WorkerConfig config;
  allot::Status s = node.ok() ? allot::config::Load(*node, config) : node.status();
  if (s.ok()) {
    allot::rollout::EnvRegistry registry;
    allot::envs::RegisterChainEnv(registry);
    s = allot::rollout::RunRolloutWorker(config, registry);
  }
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
