// What `allot train` needs to run the rlot env from a recipe (configs/rlot.yaml): the
// env_config text the rollout workers build the env from, and the dataset items.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "datasets/jsonl_loader.h"
#include "envs/rlot/rlot_config.h"
#include "llm/endpoint_config.h"
#include "rewards/prm_reward.h"

namespace allot::envs::rlot {

// Completes env.rlot from the rest of the recipe: `endpoints` when env.rlot lists none, the
// PRM request from rewards.prm, shaping_gamma from `dqn_gamma` (dqn.gamma; a shaping_gamma set
// to anything else is an error naming both), and a relative prompts_dir resolved against the
// recipe's directory (then the working directory). Checks that the env can be built
// (templates, endpoint names) before anything runs.
Result<RlotEnvConfig> CompleteRlotEnvConfig(RlotEnvConfig config,
                                            const std::vector<llm::EndpointConfig>& endpoints,
                                            const rewards::PrmRewardConfig& prm, double dqn_gamma,
                                            const std::string& recipe_path);

// The completed config as the workers' env_config text (YAML). API keys are not written:
// workers resolve their own.
Result<std::string> RlotEnvConfigForRun(const RlotEnvConfig& config,
                                        const std::vector<llm::EndpointConfig>& endpoints,
                                        const rewards::PrmRewardConfig& prm, double dqn_gamma,
                                        const std::string& recipe_path);

// Problems of a dataset split (eval_data for `allot eval`).
Result<std::vector<datasets::Example>> LoadProblems(const datasets::DatasetConfig& data,
                                                    const std::string& section);

// The training problems as dataset items ({"question", "answer", "format", "id"}); an empty
// dataset is an error naming train_data.path.
Result<std::vector<std::string>> RlotDatasetItems(const datasets::DatasetConfig& data);

}  // namespace allot::envs::rlot
