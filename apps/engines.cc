#include "apps/engines.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "apps/env_catalog.h"

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

namespace {

// The top-level sections each engine reads: its own, and those its env's episodes and `allot
// eval` read (the env's descriptor: apps/env_catalog.h), and the datasets. "" when none reads it.
std::string SectionReader(const std::string& key, const AllotConfig& cfg,
                          const std::string& engine) {
  const std::string& env = cfg.env.name;
  static const std::set<std::string> kRun = {"include", "run", "logging", "checkpoint", "trainer"};
  static const std::map<std::string, std::set<std::string>> kEngine = {
      {"grpo", {"env", "grpo", "model", "rollout"}},
      {"dqn", {"env", "dqn", "rollout"}},  // rollout: engine_dqn.cc
      {"sft", {"model", "sft"}}};
  const std::string by_engine = "the " + engine + " engine";
  if (kRun.count(key) != 0) return by_engine;
  auto own = kEngine.find(engine);
  if (own != kEngine.end() && own->second.count(key) != 0) return by_engine;
  if (engine == "sft") return "";
  // The env's own sections, as its descriptor declares them, and the datasets it draws from.
  std::set<std::string> by_env;
  if (const envs::runtime::EnvDescriptor* d = FindEnv(env); d != nullptr) {
    by_env = {d->sections.begin(), d->sections.end()};
    if (d->reads_datasets) by_env.insert({"train_data", "eval_data"});
  }
  return by_env.count(key) != 0 ? "env " + env + " (its episodes and allot eval)" : "";
}

bool Under(const std::string& path, const std::string& section) {
  return path.compare(0, section.size(), section) == 0 &&
         (path.size() == section.size() || path[section.size()] == '.');
}

// Why a key of a section that is read has no effect with this config, or "" when it has one.
// `path` without list indexes ("endpoints.name").
std::string LeafUnread(const std::string& path, const AllotConfig& cfg, const std::string& engine) {
  const std::string& env = cfg.env.name;
  // The rewards sub-sections configure their terms (rewards/composed_reward.cc); RLoT's are the
  // dqn engine's own check (engine_dqn.cc). CogER's router reads the level tags whatever the
  // terms (coger_env.cc), DeepTool's protocol the action tags (deeptool_env.cc); the answer
  // grader is every env's and allot eval's.
  if (engine == "grpo" && Under(path, "rewards")) {
    std::set<std::string> terms;
    for (const auto& t : cfg.rewards.terms) terms.insert(t.name);
    auto any = [&](std::initializer_list<const char*> names) {
      for (const char* n : names) {
        if (terms.count(n) != 0) return true;
      }
      return false;
    };
    if (Under(path, "rewards.format") && !any({"format", "accuracy", "hierarchy"}) &&
        env != "coger") {
      return "rewards.format has no effect without a format, accuracy or hierarchy term in "
             "rewards.terms";
    }
    if (Under(path, "rewards.hierarchy") && !any({"hierarchy"})) {
      return "rewards.hierarchy has no effect without the hierarchy term in rewards.terms";
    }
    if (Under(path, "rewards.prm") && !any({"prm"})) {
      return "rewards.prm has no effect without the prm term in rewards.terms";
    }
    if (Under(path, "rewards.action") && !any({"action"}) && env != "deeptool") {
      return "rewards.action has no effect without the action term in rewards.terms";
    }
    if (Under(path, "rewards.cost") && !any({"api_cost", "energy", "tokens"})) {
      return "rewards.cost has no effect without an api_cost, energy or tokens term in "
             "rewards.terms";
    }
  }
  // ZeRO shards a full-parameter AdamW (trainer/optim/zero_adamw.h): the dqn engine has no such
  // optimizer, the grpo learner trains a LoRA adapter.
  if (path == "trainer.zero_stage" && (engine != "sft" || cfg.sft.lora.enabled)) {
    return engine == "dqn" ? "the dqn engine shards no optimizer state (ZeRO is for "
                             "full-parameter sft)"
                           : "ZeRO shards full-parameter training; " +
                                 std::string(engine == "grpo" ? "grpo.lora" : "sft.lora") +
                                 " trains an adapter, whose optimizer state is small";
  }
  // RSTKit (tools/rstkit.cc): the sandbox runs execute_python alone, and the QA toolkit
  // exists only with a corpus.
  if (Under(path, "tools.sandbox") && !cfg.tools.code) {
    return "tools.sandbox has no effect while tools.code is false";
  }
  if (Under(path, "tools.knowledge_base") && path != "tools.knowledge_base.corpus" &&
      cfg.tools.knowledge_base.corpus.empty()) {
    return "tools.knowledge_base has no effect without tools.knowledge_base.corpus";
  }
  // R2-Reasoner Sec. 4.4: the procedural review's models and budget act only when it runs.
  if (Under(path, "env.r2.review") && path != "env.r2.review.enabled" &&
      !cfg.env.r2.review.enabled) {
    return "env.r2.review has no effect while env.r2.review.enabled is false";
  }
  // A dataset preset carries its own field mapping (jsonl_loader.cc).
  for (const char* data : {"train_data", "eval_data"}) {
    const auto& d = std::string(data) == "train_data" ? cfg.train_data : cfg.eval_data;
    if (Under(path, std::string(data) + ".fields") && d.preset != "custom") {
      return std::string(data) + ".fields has no effect while " + data + ".preset is " + d.preset +
             " (the preset maps the fields)";
    }
  }
  return "";
}

void Walk(const config::ConfigNode& node, const std::string& path, const std::string& bare,
          const std::function<void(const config::ConfigNode&, const std::string&,
                                   const std::string&)>& leaf) {
  if (node.is_map() && !node.entries().empty()) {
    for (const auto& [key, child] : node.entries()) {
      Walk(child, path.empty() ? key : path + "." + key, bare.empty() ? key : bare + "." + key,
           leaf);
    }
    return;
  }
  const auto& items = node.items();
  const bool maps =
      node.is_sequence() && std::any_of(items.begin(), items.end(),
                                        [](const config::ConfigNode& n) { return n.is_map(); });
  if (!maps) {
    leaf(node, path, bare);
    return;
  }
  for (size_t i = 0; i < items.size(); ++i) {
    Walk(items[i], path + "[" + std::to_string(i) + "]", bare, leaf);
  }
}

}  // namespace

std::vector<WrittenKey> WrittenKeys(const config::ConfigNode& written, const AllotConfig& cfg,
                                    const std::string& engine) {
  std::vector<WrittenKey> keys;
  Walk(written, "", "",
       [&](const config::ConfigNode& node, const std::string& path, const std::string& bare) {
         WrittenKey k{path, node.origin()};
         const std::string section = bare.substr(0, bare.find('.'));
         k.reader = SectionReader(section, cfg, engine);
         if (section == "env" && bare.size() > 4 && bare != "env.name") {  // env.<name>...
           const std::string name = bare.substr(4, bare.find('.', 4) - 4);
           k.reader = name == cfg.env.name ? "env " + name + " (its episodes and allot eval)" : "";
         }
         if (k.reader.empty()) {
           k.whole_section = true;
           k.unread =
               section == "env"
                   ? "configures an env this run does not use (env.name: " + cfg.env.name + ")"
                   : "section '" + section + "' is not read by the " + engine +
                         " engine with env.name " + cfg.env.name;
         } else {
           k.unread = LeafUnread(bare, cfg, engine);
           if (!k.unread.empty()) k.reader.clear();
         }
         keys.push_back(std::move(k));
       });
  return keys;
}

std::string UnreadKeys(const config::ConfigNode& written, const AllotConfig& cfg,
                       const std::string& engine) {
  std::string errors;
  for (const WrittenKey& k : WrittenKeys(written, cfg, engine)) {
    if (k.reader.empty() && !k.whole_section) {
      errors += "\n  " + k.origin.ToString() + ": " + k.path + ": " + k.unread;
    }
  }
  return errors;
}

std::string UnreadSections(const config::ConfigNode& written, const AllotConfig& cfg,
                           const std::string& engine) {
  static const std::set<std::string> kEngineSections = {"grpo", "dqn", "sft", "model"};
  std::string errors;
  for (const auto& [key, node] : written.entries()) {
    // The engines' own sections, which each engine names itself.
    if (!SectionReader(key, cfg, engine).empty() || kEngineSections.count(key) != 0) continue;
    errors += "\n  " + node.origin().ToString() + ": section '" + key + "' is not read by the " +
              engine + " engine with env.name " + cfg.env.name + ", nor by allot eval";
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
