// The local parts of a run: LLM endpoints that the recipe serves itself (`endpoints[i].serve`:
// an `allot serve` process) and rollout workers as processes (`rollout.local_workers`: `allot
// rollout-worker`). `allot train | resume | sft | eval` start them on free loopback ports, wait
// until each answers, wire their addresses into the run's config, write their logs under the run
// directory, and stop them when the command ends, however it ends (success, failure, SIGINT,
// SIGTERM; a child also dies with its parent: PR_SET_PDEATHSIG).
//
// The modules' sections (llm::EndpointConfig, rollout::RolloutConfig) know nothing of these keys:
// LoadConfig takes them out of the recipe tree before binding (ExtractLocalParts), so that a
// remote worker never receives them in its env_config.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "core/config/node.h"
#include "core/config/schema.h"
#include "core/status.h"

namespace allot::apps {

struct AllotConfig;

// `endpoints[i].serve`: what `allot serve` takes, less the address (a free loopback port) and
// the API key (the server is this run's alone).
struct LocalServe {
  std::string model;                  // HF directory; relative: beside the recipe, else the cwd
  std::vector<std::string> adapters;  // NAME=DIR, loaded at start
  std::string served_model_name;      // default: the endpoint's model, else its name
  std::string dtype = "auto";
  std::string device = "cpu";
  int threads = 0;
  int max_batch = 32;
  int batch_wait_ms = 2;
  bool deterministic = false;  // allot serve --deterministic
  std::string chat_template = "auto";
  double start_timeout_s = 600.0;  // until /health answers: loading a large model takes minutes

  void Describe(config::Visitor& v) {
    v.Field("model", model,
            {.doc = "Hugging Face model directory (relative: beside the recipe file that sets "
                    "it, else the working directory)"});
    v.Field("adapters", adapters, {.doc = "PEFT adapters loaded at start, as NAME=DIR"});
    v.Field("served_model_name", served_model_name,
            {.doc = "model id clients send (default: the endpoint's model, else its name)"});
    v.Field("dtype", dtype,
            {.doc = "weight dtype", .choices = {"auto", "float32", "bfloat16", "float16"}});
    v.Field("device", device, {.doc = "torch device (cpu, cuda, cuda:1)"});
    v.Field("threads", threads, {.doc = "CPU threads (0 = one per core)", .min = 0});
    v.Field("max_batch", max_batch, {.doc = "sequences decoded together", .min = 1});
    v.Field("batch_wait_ms", batch_wait_ms, {.doc = "wait for more requests per batch", .min = 0});
    v.Field("deterministic", deterministic,
            {.doc = "batch-invariant decoding (allot serve --deterministic): seeded samples do "
                    "not depend on what else is in the batch"});
    v.Field(
        "chat_template", chat_template,
        {.doc = "chat template of /v1/chat/completions", .choices = {"auto", "chatml", "llama3"}});
    v.Field("start_timeout_s", start_timeout_s,
            {.doc = "seconds until the server must answer /health", .min = 1.0});
  }
};

struct LocalEndpoint {
  size_t index = 0;  // in endpoints[]
  std::string name;
  LocalServe serve;
};

// What a recipe asks to run locally.
struct LocalPartsConfig {
  std::vector<LocalEndpoint> endpoints;
  int workers = 0;  // rollout.local_workers
  double worker_start_timeout_s = 120.0;

  bool empty() const { return endpoints.empty() && workers == 0; }
};

// Takes `endpoints[i].serve` and `rollout.local_workers` out of `root` (a recipe after its
// overrides) and checks them: a `serve` block with a `base_url` (which it would replace) is an
// error naming both, and so is an `api_key` on a served endpoint.
Result<LocalPartsConfig> ExtractLocalParts(config::ConfigNode& root);

// The resolved recipe `yaml` (ResolvedYaml) with the local parts written back: each served
// endpoint's `serve` block instead of its base_url, and rollout.local_workers. What a run
// directory's config.yaml holds, so that `allot resume` and `allot eval RUN` start them again.
Result<std::string> WithLocalParts(const std::string& yaml, const LocalPartsConfig& local);

// The running processes. Stop() (also the destructor, and SIGINT/SIGTERM while they run) ends
// every one: SIGTERM, then SIGKILL after a grace period, each reaped. Not thread-safe; one
// instance at a time per process (the signal handler's list is global).
class LocalParts {
 public:
  struct Options {
    std::string log_dir;     // logs: <log_dir>/<prefix>serve-<name>.log, <prefix>worker-<k>.log
    std::string log_prefix;  // "" for train, "eval-" for eval
    bool workers = true;     // start rollout.local_workers (the engines; eval runs in-process)
    std::string recipe;      // what the workers load (their rollout.worker section) ...
    std::vector<std::string> overrides;  // ... with these --set assignments
  };

  // Starts what `local` names, waits for each, and writes its address into `cfg`
  // (endpoints[i].base_url and model, rollout.dispatcher.workers). A part that exits or does not
  // answer in time stops the others and fails with a message naming it and its log file.
  static Result<std::unique_ptr<LocalParts>> Start(const LocalPartsConfig& local,
                                                   const Options& options, AllotConfig& cfg);
  ~LocalParts();
  LocalParts(const LocalParts&) = delete;
  LocalParts& operator=(const LocalParts&) = delete;

  void Stop();

 private:
  LocalParts() = default;
  struct Child {
    pid_t pid = -1;
    std::string what;  // "endpoint 't0' (allot serve)"
    std::string log;
  };
  Result<size_t> Spawn(const std::vector<std::string>& argv, const std::string& what,
                       const std::string& log);
  std::vector<Child> children_;
};

}  // namespace allot::apps
