// allot serve | rollout-worker | version
#include <CLI/CLI.hpp>

#include <iostream>

#include "apps/allot_config.h"
#include "apps/commands.h"
#include "envs/synthetic/chain_env.h"
#include "rollout/env.h"
#include "rollout/worker.h"

namespace allot::apps {

void AddServiceCommands(CLI::App& app, int* exit_code) {
  auto sink = std::make_shared<std::vector<std::string>>();
  CLI::App* serve =
      app.add_subcommand("serve", "OpenAI-compatible server for a local model and adapters");
  serve->add_option("--model", *sink, "Hugging Face model directory");
  serve->add_option("--adapter", *sink, "PEFT adapter directory");
  serve->callback([=] { *exit_code = NotLanded("serve", "the local model server"); });

  struct WorkerArgs {
    std::string config;
    std::string listen;
    std::vector<std::string> overrides;
  };
  auto wa = std::make_shared<WorkerArgs>();
  CLI::App* worker = app.add_subcommand(
      "rollout-worker", "Serve episodes to a learner over gRPC until SIGTERM, then drain");
  worker->add_option("-c,--config", wa->config, "recipe YAML (its rollout.worker section)")
      ->check(CLI::ExistingFile);
  worker->add_option("--listen", wa->listen, "host:port (default 127.0.0.1:50051)");
  worker->add_option("--set", wa->overrides,
                     "dotted override, e.g. --set rollout.worker.threads=4");
  worker->callback([=] {
    LoadedConfig loaded;
    if (!wa->config.empty()) {
      auto l = LoadConfig(wa->config, wa->overrides);
      if (!l.ok()) {
        std::cerr << "allot rollout-worker: " << l.status().message() << "\n";
        *exit_code = kExitError;
        return;
      }
      loaded = std::move(*l);
    }
    rollout::WorkerConfig cfg = loaded.config.rollout.worker;
    if (!wa->listen.empty()) cfg.listen = wa->listen;
    envs::RegisterChainEnv(rollout::EnvRegistry::Global());
    Status s = rollout::RunRolloutWorker(cfg, rollout::EnvRegistry::Global());
    if (!s.ok()) {
      std::cerr << "allot rollout-worker: " << s.message() << "\n";
      *exit_code = kExitError;
      return;
    }
    *exit_code = kExitOk;
  });
}

void AddInfoCommands(CLI::App& app, int* exit_code) {
  CLI::App* version = app.add_subcommand("version", "Print the version and build details");
  version->callback([=] {
    std::cout << "allot " << ALLOT_VERSION << "\n";
#ifdef __VERSION__
    std::cout << "compiler: " << __VERSION__ << "\n";
#endif
    *exit_code = kExitOk;
  });
}

}  // namespace allot::apps
