#include "envs/rlot/rlot_recipe.h"

#include <filesystem>

#include "core/config/binder.h"
#include "envs/rlot/rlot_eval.h"
#include "envs/rlot/rlot_prompts.h"

namespace allot::envs::rlot {

namespace fs = std::filesystem;

Result<RlotEnvConfig> CompleteRlotEnvConfig(RlotEnvConfig config,
                                            const std::vector<llm::EndpointConfig>& endpoints,
                                            const rewards::PrmRewardConfig& prm, double dqn_gamma,
                                            const std::string& recipe_path) {
  if (config.endpoints.empty()) config.endpoints = endpoints;
  config.prm = prm;
  // The shaping must discount as the learner does, or it is not policy-invariant.
  if (config.shaping_gamma < 0.0) {
    config.shaping_gamma = dqn_gamma;
  } else if (config.shaping_gamma != dqn_gamma) {
    return InvalidArgument("env.rlot.shaping_gamma: " + std::to_string(config.shaping_gamma) +
                           " differs from dqn.gamma " + std::to_string(dqn_gamma) +
                           " (leave it unset: it is filled in from dqn.gamma)");
  }
  std::error_code ec;
  const fs::path dir(config.prompts_dir);
  if (dir.is_relative() && !recipe_path.empty()) {
    const fs::path beside = fs::path(recipe_path).parent_path() / dir;
    if (fs::is_directory(beside, ec)) {
      config.prompts_dir = fs::absolute(beside, ec).lexically_normal().string();
    } else if (fs::is_directory(dir, ec)) {
      config.prompts_dir = fs::absolute(dir, ec).lexically_normal().string();
    }
  }
  ALLOT_RETURN_IF_ERROR(RlotPrompts::Load(config.prompts_dir).status());
  auto has = [&](const std::string& name) {
    for (const auto& e : config.endpoints) {
      if (e.name == name) return true;
    }
    return false;
  };
  if (!has(config.llm_endpoint)) {
    return InvalidArgument("env.rlot.llm_endpoint: no endpoint named '" + config.llm_endpoint +
                           "' in endpoints");
  }
  if (config.step_scorer == "prm" && !has(config.prm_endpoint)) {
    return InvalidArgument("env.rlot.prm_endpoint: no endpoint named '" + config.prm_endpoint +
                           "' in endpoints (or set env.rlot.step_scorer: rule)");
  }
  return config;
}

Result<std::string> RlotEnvConfigForRun(const RlotEnvConfig& config,
                                        const std::vector<llm::EndpointConfig>& endpoints,
                                        const rewards::PrmRewardConfig& prm, double dqn_gamma,
                                        const std::string& recipe_path) {
  ALLOT_ASSIGN_OR_RETURN(RlotEnvConfig done,
                         CompleteRlotEnvConfig(config, endpoints, prm, dqn_gamma, recipe_path));
  return config::ToYaml(done);
}

Result<std::vector<datasets::Example>> LoadProblems(const datasets::DatasetConfig& data,
                                                    const std::string& section) {
  if (data.path.empty()) return InvalidArgument(section + ".path: no dataset is set");
  ALLOT_ASSIGN_OR_RETURN(datasets::Dataset ds, datasets::LoadJsonl(data));
  if (ds.examples.empty()) return InvalidArgument(section + ".path: " + data.path + " is empty");
  return std::move(ds.examples);
}

Result<std::vector<std::string>> RlotDatasetItems(const datasets::DatasetConfig& data) {
  ALLOT_ASSIGN_OR_RETURN(std::vector<datasets::Example> examples,
                         LoadProblems(data, "train_data"));
  std::vector<std::string> items;
  items.reserve(examples.size());
  for (const auto& e : examples) items.push_back(DatasetItem(e));
  return items;
}

}  // namespace allot::envs::rlot
