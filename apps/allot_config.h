// AllotConfig: the whole configuration of a run, assembled from each module's section.
// The defaults live in the sections' member initializers; recipes in configs/ override them.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "apps/local_parts.h"
#include "core/config/schema.h"
#include "core/run_config.h"
#include "core/status.h"
#include "datasets/jsonl_loader.h"
#include "datasets/sampler.h"
#include "envs/atlas/atlas_config.h"
#include "envs/coger/coger_config.h"
#include "envs/deeptool/deeptool_config.h"
#include "envs/r2/r2_config.h"
#include "envs/rlot/rlot_config.h"
#include "envs/synthetic/chain_mdp.h"
#include "llm/endpoint_config.h"
#include "models/model_config.h"
#include "rewards/composed_reward.h"
#include "rollout/config.h"
#include "tools/rstkit.h"
#include "trainer/dqn/dqn_config.h"
#include "trainer/grpo/grpo_config.h"
#include "trainer/sft/sft_config.h"
#include "trainer/trainer_config.h"

namespace allot::apps {

// The environment episodes run in. `chain` is the synthetic logic-block MDP; the paper
// environments (rlot, coger, r2, deeptool, atlas) join as they land.
struct EnvSection {
  std::string name = "chain";
  envs::ChainMdpConfig chain;
  envs::coger::CogerSection coger;  // CogER's router env; endpoints, rewards, tools: the recipe's
  envs::rlot::RlotEnvConfig rlot;  // RLoT's LLM logic blocks (dqn.distributed only)
  envs::deeptool::DeepToolSection deeptool;  // endpoints, rewards, tools: the recipe's
  envs::r2::R2Section r2;  // R2-Reasoner; the pool (endpoints), gpu, rewards: the recipe's
  envs::atlas::AtlasSection atlas;  // ATLAS (allot eval); endpoints, gpu: the recipe's

  void Describe(config::Visitor& v) {
    v.Field("name", name,
            {.doc = "episode environment",
             .choices = {"chain", "rlot", "coger", "deeptool", "r2", "atlas"}});
    v.Field("chain", chain);
    v.Field("coger", coger, {.doc = "CogER routing, CoTool, L_min and prompts (Sec. 4)"});
    v.Field("rlot", rlot, {.doc = "RLoT's LLM env; endpoints and prm default to the recipe's"});
    v.Field("deeptool", deeptool, {.doc = "DeepTool's interleaved tool steps (Sec. 2.2-2.3)"});
    v.Field("r2", r2, {.doc = "R2-Reasoner decomposer, allocator and execution (Sec. 3-4)"});
    v.Field("atlas", atlas, {.doc = "ATLAS explore orchestrator (review page; allot eval)"});
  }
};

struct AllotConfig {
  RunConfig run;
  LoggingConfig logging;
  CheckpointConfig checkpoint;
  trainer::TrainerConfig trainer;
  trainer::DqnConfig dqn;
  trainer::GrpoConfig grpo;
  trainer::SftConfig sft;
  models::ModelConfig model;
  EnvSection env;
  std::vector<llm::EndpointConfig> endpoints;
  llm::GpuProfile gpu;
  rewards::RewardConfig rewards;
  tools::ToolsConfig tools;
  datasets::DatasetConfig train_data;
  datasets::DatasetConfig eval_data;
  datasets::SamplerConfig sampler;
  rollout::RolloutConfig rollout;

  void Describe(config::Visitor& v) {
    v.Field("run", run);
    v.Field("logging", logging);
    v.Field("checkpoint", checkpoint);
    v.Field("trainer", trainer);
    v.Field("dqn", dqn);
    v.Field("grpo", grpo);
    v.Field("sft", sft, {.doc = "supervised fine-tuning (trainer.algorithm: sft, `allot sft`)"});
    v.Field("model", model, {.doc = "the local policy model (HF directory) for GRPO/SFT"});
    v.Field("env", env);
    v.Field("endpoints", endpoints, {.doc = "LLM endpoints by logical name (OpenAI-compatible)"});
    v.Field("gpu", gpu, {.doc = "GPU profile for energy estimates (R2-Reasoner: A100 SXM)"});
    v.Field("rewards", rewards);
    v.Field("tools", tools, {.doc = "RSTKit tools (CogER App. D.2)"});
    v.Field("train_data", train_data);
    v.Field("eval_data", eval_data);
    v.Field("sampler", sampler);
    v.Field("rollout", rollout);
  }
};

struct LoadedConfig {
  AllotConfig config;
  std::map<std::string, std::string> secret_paths;  // values from ${ENV}: printed as ${VAR}
  std::string source;                               // the file it came from
  std::vector<std::string> overrides;               // the --set assignments applied
  LocalPartsConfig local;  // endpoints[i].serve, rollout.local_workers (apps/local_parts.h)
};

// Loads a recipe file, applies `--set` overrides, binds and validates. A required key
// (`${NAME:?hint}`) that neither NAME nor a `--set` gives is an error naming the key, NAME and
// the hint; with `required_sections`, only under those top-level sections (a command that reads
// part of a recipe: a rollout worker its rollout section).
Result<LoadedConfig> LoadConfig(const std::string& path, const std::vector<std::string>& overrides,
                                const std::vector<std::string>* required_sections = nullptr);

// The resolved config as YAML, secrets redacted: what remote workers receive (no local parts).
std::string ResolvedYaml(LoadedConfig& loaded, bool with_docs = false);
// ResolvedYaml with the local parts written back (WithLocalParts): a run's config.yaml.
Result<std::string> RecipeYaml(LoadedConfig& loaded);

// Finds configs/<name>.yaml: a path as given, then $ALLOT_CONFIGS_DIR, ./configs, and the
// configs/ folder next to the installed or built executable.
Result<std::string> FindRecipe(const std::string& name_or_path);

}  // namespace allot::apps
