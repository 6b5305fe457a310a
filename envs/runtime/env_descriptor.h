// One env's descriptor: what `allot train`, `allot eval`, `allot rollout-worker` and the recipe
// checks know of an env, declared by the env itself (envs/<name>/<name>_env.h) and listed by
// apps/env_catalog.cc. envs/README.md says how a new env joins.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "core/config/binder.h"
#include "core/config/node.h"
#include "core/status.h"
#include "datasets/jsonl_loader.h"
#include "envs/runtime/env.h"

namespace allot::envs::runtime {

// What an env's trajectories train.
enum class EnvKind {
  kNavigator,  // DQN transitions (trainer.algorithm: dqn)
  kLlmPolicy,  // token segments with log-probs (trainer.algorithm: grpo)
};

// What `allot eval` hands an env's evaluation.
struct EvalRequest {
  // The resolved recipe (YAML, secrets as ${VAR}), as rollout workers receive it: the env reads
  // its config from it with LoadEnvConfig.
  std::string recipe;
  std::string recipe_path;  // the file it came from: relative paths in it are read beside it
  datasets::DatasetConfig eval_data;
  std::string method;   // --method; "" = the env's default
  std::string adapter;  // --adapter
  int64_t episodes = 100;
  uint64_t seed = 0;
  std::string json;  // --json: also write the report here
  std::ostream* out = nullptr;
  std::ostream* err = nullptr;
};

struct EnvDescriptor {
  std::string name;  // env.name; its own section is env.<name>
  EnvKind kind;
  // The top-level recipe sections its config reads beside env.<name> (the fields of its config
  // struct, or what its recipe completion reads); train_data and eval_data: reads_datasets.
  std::vector<std::string> sections;
  void (*register_env)(EnvRegistrar&) = nullptr;
  // `allot eval` of this env (an exit code); null for the navigator's envs, which the trainer's
  // navigator evaluation runs (trainer/dqn/navigator_eval.h).
  int (*evaluate)(const EvalRequest&) = nullptr;
  // Its episodes draw dataset items, so that train_data and eval_data are read (the chain MDP's
  // draw none).
  bool reads_datasets = true;
  // Trajectory info keys with a small set of values whose shares the GRPO learner reports per
  // step (metrics share/<key>/<value>, plotted by allot train as shares.png).
  std::vector<std::string> step_shares;
};

// The node an env's config loads from `env_config` text: the text itself when it is the env's
// own config (YAML or JSON), or, for a whole recipe (a map with an `env` section), env.<name>
// under the key <name> and the descriptor's sections beside it. ${VAR} placeholders resolve from
// this process's environment, as the learner's resolved recipe keeps them
// (core/config/binder.cc prints them back) and API keys are each host's own.
Result<config::ConfigNode> EnvConfigNode(const std::string& env_config,
                                         const EnvDescriptor& descriptor);

// The one env config loader: `Config` from `env_config` (empty: the defaults).
template <typename Config>
Result<Config> LoadEnvConfig(const std::string& env_config, const EnvDescriptor& descriptor) {
  Config config;
  if (env_config.empty()) return config;
  ALLOT_ASSIGN_OR_RETURN(config::ConfigNode node, EnvConfigNode(env_config, descriptor));
  ALLOT_RETURN_IF_ERROR(config::Load(node, config));
  return config;
}

}  // namespace allot::envs::runtime
