#include "apps/engines.h"

#include <algorithm>
#include <set>

namespace allot::apps {

int RunDqnEngine(RunContext& ctx);
int RunSftEngine(RunContext& ctx);
int RunGrpoEngine(RunContext& ctx);

namespace {

// model.checkpoint_layers narrows model.gradient_checkpointing (grpo and sft); without it, it
// would do nothing.
Status CheckCheckpointLayers(const config::ConfigNode& written, const AllotConfig& cfg,
                             const std::string& source) {
  const config::ConfigNode* model = written.Find("model");
  const config::ConfigNode* n = model == nullptr ? nullptr : model->Find("checkpoint_layers");
  if (n == nullptr || cfg.model.gradient_checkpointing) return Status::Ok();
  return InvalidArgument("config " + source + ":\n  " + n->origin().ToString() +
                         ": model.checkpoint_layers has no effect while "
                         "model.gradient_checkpointing is false");
}

}  // namespace

std::string OtherEnvSections(const config::ConfigNode& written, const std::string& env_name,
                             const std::vector<std::string>& skip) {
  const config::ConfigNode* env = written.Find("env");
  if (env == nullptr) return "";
  std::string errors;
  for (const auto& [key, node] : env->entries()) {
    if (key == "name" || key == env_name) continue;
    if (std::find(skip.begin(), skip.end(), key) != skip.end()) continue;
    errors += "\n  " + node.origin().ToString() + ": env." + key + " configures the " + key +
              " env, which this run does not use (env.name: " + env_name + ")";
  }
  return errors;
}

std::string UnreadSections(const config::ConfigNode& written, const AllotConfig& cfg,
                           const std::string& engine) {
  // What each env's episodes and `allot eval` read besides env.<name>: their config structs
  // (CogerEnvConfig, R2EnvConfig, DeepToolEnvConfig, AtlasEnvConfig; RLoT's recipe completion
  // and eval), and the datasets.
  const std::string& env = cfg.env.name;
  std::set<std::string> read = {"include", "run", "logging", "checkpoint", "trainer", "env"};
  if (env == "coger" || env == "deeptool") {
    read.insert({"endpoints", "gpu", "rewards", "tools", "train_data", "eval_data"});
  } else if (env == "r2") {
    read.insert({"endpoints", "gpu", "rewards", "train_data", "eval_data"});
  } else if (env == "atlas") {
    read.insert({"endpoints", "gpu", "train_data", "eval_data"});
  } else if (env == "rlot") {
    read.insert({"endpoints", "rewards", "train_data", "eval_data"});  // rewards: engine_dqn.cc
  }
  if (engine == "grpo") read.insert({"grpo", "model", "rollout"});
  if (engine == "dqn") read.insert({"dqn", "rollout"});  // rollout: engine_dqn.cc
  static const std::set<std::string> kEngineSections = {"grpo", "dqn", "sft", "model"};
  std::string errors;
  for (const auto& [key, node] : written.entries()) {
    if (read.count(key) != 0 || kEngineSections.count(key) != 0) continue;
    errors += "\n  " + node.origin().ToString() + ": section '" + key + "' is not read by the " +
              engine + " engine with env.name " + env + ", nor by allot eval";
  }
  return errors;
}

std::string OverriddenDispatcherKeys(const config::ConfigNode& written, const std::string& why) {
  const config::ConfigNode* rollout = written.Find("rollout");
  const config::ConfigNode* d = rollout == nullptr ? nullptr : rollout->Find("dispatcher");
  if (d == nullptr) return "";
  std::string errors;
  for (const char* k : {"max_policy_lag", "stale_policy", "stale_weight_decay", "deliver_groups"}) {
    if (const config::ConfigNode* n = d->Find(k); n != nullptr) {
      errors += "\n  " + n->origin().ToString() + ": rollout.dispatcher." + k +
                " has no effect today: " + why;
    }
  }
  return errors;
}

Status CheckRecipe(const LoadedConfig& loaded, const std::vector<std::string>& overrides,
                   bool resume) {
  config::ConfigNode written = config::ConfigNode::Map(config::Origin{"--set", 0, 0});
  if (!resume) {
    ALLOT_ASSIGN_OR_RETURN(written, config::LoadFile(loaded.source));
  }
  for (const auto& o : overrides) ALLOT_RETURN_IF_ERROR(config::ApplyOverride(written, o));
  const std::string source = resume ? "--set (resume of " + loaded.source + ")" : loaded.source;
  const std::string& algorithm = loaded.config.trainer.algorithm;
  if (algorithm == "dqn") return CheckDqnRecipe(written, loaded.config, source);
  if (algorithm == "grpo" || algorithm == "sft") {
    ALLOT_RETURN_IF_ERROR(CheckCheckpointLayers(written, loaded.config, source));
  }
  if (algorithm == "grpo") return CheckGrpoRecipe(written, loaded.config, source);
  if (algorithm == "sft") return CheckSftRecipe(written, loaded.config, source);
  return Status::Ok();  // no engine: refused by FindTrainEngine
}

TrainEngine FindTrainEngine(const std::string& algorithm) {
  // One engine per trainer.algorithm; anything else is refused before a run directory exists.
  if (algorithm == "dqn") return &RunDqnEngine;
  if (algorithm == "sft") return &RunSftEngine;
  if (algorithm == "grpo") return &RunGrpoEngine;
  return nullptr;
}

}  // namespace allot::apps
