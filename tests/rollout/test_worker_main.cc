// A rollout worker process for the integration tests: the product's RunRolloutWorker with the
// test-only "echo" env registered. Usage: allot_rollout_test_worker '<worker config YAML>'
#include <cstdio>

#include "core/config/binder.h"
#include "core/config/node.h"
#include "rollout/worker.h"
#include "tests/rollout/echo_env.h"

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
    allot::rollout::testing::RegisterEchoEnv(registry);
    s = allot::rollout::RunRolloutWorker(config, registry);
  }
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
