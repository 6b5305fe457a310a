// allot serve | rollout-worker | version
#include <CLI/CLI.hpp>

#include <iostream>

#include "apps/allot_config.h"
#include "apps/commands.h"
#include "apps/env_catalog.h"
#include "core/logging.h"
#include "llm/serve/serve_command.h"
#include "rollout/env_registry.h"
#include "rollout/malloc_tuning.h"
#include "rollout/worker.h"

namespace allot::apps {

void AddServiceCommands(CLI::App& app, int* exit_code) {
  auto sc = std::make_shared<llm::serve::ServeConfig>();
  CLI::App* serve =
      app.add_subcommand("serve",
                         "OpenAI-compatible server for one local Hugging Face model (Qwen2, "
                         "Qwen3, Llama) and LoRA adapters: completions and chat (token ids, "
                         "log-probs, prompt_logprobs, SSE), adapter load/unload, PRM step "
                         "pooling (/pooling), /tokenize, /health, Prometheus /metrics; "
                         "continuous batching");
  serve->add_option("--model", sc->model, "Hugging Face model directory")
      ->required()
      ->check(CLI::ExistingDirectory);
  serve->add_option("--adapter", sc->adapters, "PEFT adapter to load, NAME=DIR (repeatable)");
  serve->add_option("--host", sc->host, "address to bind")->capture_default_str();
  serve->add_option("--port", sc->port, "TCP port (0 = any free port)")->capture_default_str();
  serve->add_option("--max-batch", sc->max_batch, "sequences decoded together")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  serve->add_option("--batch-wait-ms", sc->batch_wait_ms, "wait for more requests per batch")
      ->capture_default_str();
  serve->add_option("--served-model-name", sc->served_model_name,
                    "model id clients send (default: the directory's name)");
  serve->add_option("--dtype", sc->dtype, "weight dtype")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "float32", "bfloat16", "float16"}));
  serve->add_option("--device", sc->device, "torch device")->capture_default_str();
  serve->add_option("--threads", sc->threads, "CPU threads for LibTorch and the BLAS (0 = all)")
      ->capture_default_str();
  serve
      ->add_option("--cuda-graphs", sc->cuda_graphs,
                   "decode steps as CUDA graphs: auto (on for CUDA devices), true, false")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "true", "false"}));
  serve->add_flag("--deterministic", sc->deterministic,
                  "batch-invariant decoding: a seeded request samples the same tokens and "
                  "log-probs whatever else is decoded with it (one forward pass per sequence)");
  serve->add_option("--api-key", sc->api_key, "require Authorization: Bearer KEY");
  serve->add_option("--chat-template", sc->chat_template.kind, "auto, chatml or llama3")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "chatml", "llama3"}));
  serve->callback([=] {
    if (!sc->api_key.empty()) RegisterSecret(sc->api_key);
    Status s = llm::serve::RunServe(*sc, [&](const std::string& url) {
      std::cout << "allot serve: listening on " << url << " (Ctrl-C to stop)" << std::endl;
    });
    if (!s.ok()) {
      std::cerr << "allot serve: " << s.message() << "\n";
      *exit_code = kExitError;
      return;
    }
    *exit_code = kExitOk;
  });

  struct WorkerArgs {
    std::string config;
    std::string listen;
    std::vector<std::string> overrides;
  };
  auto wa = std::make_shared<WorkerArgs>();
  CLI::App* worker = app.add_subcommand(
      "rollout-worker",
      "Run episodes of every env (coger, rlot, r2, deeptool, atlas, chain) for learners over "
      "gRPC (allot.v1), with Prometheus /metrics, until SIGTERM, then drain");
  worker
      ->add_option("-c,--config", wa->config,
                   "recipe YAML (its rollout section; the env's config comes with each "
                   "episode from the learner)")
      ->check(CLI::ExistingFile);
  worker->add_option("--listen", wa->listen,
                     "host:port, instead of rollout.worker.listen (default 127.0.0.1:50051; "
                     "port 0: any free port)");
  worker->add_option("--set", wa->overrides,
                     "dotted override, e.g. --set rollout.worker.threads=4");
  worker->callback([=] {
    LoadedConfig loaded;
    if (wa->config.empty() && !wa->overrides.empty()) {
      // Without a recipe there is nothing to override: refused, never silently ignored.
      std::cerr << "allot rollout-worker: --set " << wa->overrides.front()
                << " needs -c/--config (the recipe whose rollout.worker section it overrides)\n";
      *exit_code = kExitError;
      return;
    }
    if (!wa->config.empty()) {
      // A worker reads the rollout section; the recipe's other required keys (model path,
      // data, endpoint URLs) are the learner's, whose resolved recipe comes with each request.
      const std::vector<std::string> read = {"rollout"};
      auto l = LoadConfig(wa->config, wa->overrides, &read);
      if (!l.ok()) {
        std::cerr << "allot rollout-worker: " << l.status().message() << "\n";
        *exit_code = kExitError;
        return;
      }
      loaded = std::move(*l);
    }
    rollout::WorkerConfig cfg = loaded.config.rollout.worker;
    if (!wa->listen.empty()) cfg.listen = wa->listen;
    // A worker process runs episodes and gRPC streams only: keep freed pages and one arena
    // (rollout/malloc_tuning.h has the measurements).
    if (cfg.keep_freed_memory) rollout::KeepFreedMemoryForReuse(/*max_arenas=*/1);
    RegisterAllEnvs(rollout::EnvRegistry::Global());
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
