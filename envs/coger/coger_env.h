// The CogER env (CogER Sec. 4): the router policy tags the query L1..L4 (App. B.1) and the
// episode routes it (Sec. 4.2): L1 is the router's own answer, L2 a medium model with chain of
// thought, L3 a large reasoning model, L4 CoTool (Sec. 4.4). Rewards are format + accuracy +
// hierarchy (Eq. 3-8) with L_min from a cached per-level solver or the dataset.
//
// The trajectory holds the router's conversation: its prompt (masked) and its sampled output
// (the only trainable segment). Downstream models and tools run in their own token spaces and
// show up in accounting and info, not as segments. The L_min oracle's calls are the reward's,
// not the routing decision's: they are reported in info (kOracleCostInfo), not accounted.
//
// Thread-safe: episodes run concurrently on one env.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "core/status.h"
#include "envs/coger/coger_config.h"
#include "envs/coger/cotool.h"
#include "envs/coger/level_outcome_cache.h"
#include "envs/coger/tool_selector.h"
#include "envs/runtime/env.h"
#include "envs/runtime/env_descriptor.h"
#include "envs/runtime/episode.h"
#include "rewards/answer_extractor.h"
#include "rewards/composed_reward.h"

namespace allot::llm {
class Client;
}

namespace allot::envs::coger {

// The trajectory info key of the L_min oracle's spend in USD (its uncached levels' calls), which
// the episode's accounting leaves out; the GRPO trainer reports it as the metric of that name.
inline constexpr char kOracleCostInfo[] = "oracle_cost_usd";

// A dataset item (datasets/example_json.h), with CogER's "min_level" (L_min) when the dataset
// gives it.
struct CogerItem {
  std::string question;  // with lettered options appended when there are any
  std::string reference;
  rewards::AnswerFormat format = rewards::AnswerFormat::kBoxed;
  std::optional<int> min_level;
};
Result<CogerItem> ParseCogerItem(const std::string& json, rewards::AnswerFormat default_format);

// One level's answer to a query.
struct LevelAnswer {
  int level = 0;
  std::string text;      // the text the answer is read from
  std::string endpoint;  // who answered
  bool truncated = false;
  std::string runaway;  // L4: why CoTool's generation ran away (then truncated is set)
  CoToolResult cotool;  // L4 only
  runtime::Failure failure;
};

class CogerEnv : public runtime::Env {
 public:
  // `client`: the endpoint pool; null = built from config.endpoints.
  static Result<std::unique_ptr<CogerEnv>> Create(CogerEnvConfig config,
                                                  std::shared_ptr<llm::Client> client = nullptr);
  // From env_config text: YAML or JSON of CogerEnvConfig, or a whole recipe (its env.coger,
  // endpoints, gpu, rewards and tools sections; the rest is the trainer's).
  static Result<std::unique_ptr<CogerEnv>> FromConfigText(const std::string& text);
  ~CogerEnv() override;

  Result<runtime::Trajectory> Run(const runtime::EpisodeInput& input) override;

  // Answers at a fixed level, without the router (L_min solver, eval baselines). L1 asks
  // lmin.l1_endpoint directly (No_Think).
  LevelAnswer AnswerAtLevel(runtime::Episode& episode, const std::string& question, int level,
                            uint32_t step = 0) const;
  // Whether `level` answers the item correctly, from the L_min cache or by solving it once.
  Result<bool> SolvedAtLevel(const rewards::RewardInput& input, int level) const;

  const CogerEnvConfig& config() const { return config_; }
  llm::Client& client() const { return *client_; }
  const rewards::ComposedReward& reward() const { return *reward_; }
  const LevelOutcomeCache& lmin_cache() const { return *cache_; }
  // YAML a worker rebuilds this env from (prompt texts inline; secrets redacted).
  std::string ConfigText() const;

 private:
  explicit CogerEnv(CogerEnvConfig config) : config_(std::move(config)) {}

  CogerEnvConfig config_;
  std::shared_ptr<llm::Client> client_;
  std::unique_ptr<tools::ToolRegistry> tools_;
  std::unique_ptr<ToolSelector> selector_;
  std::unique_ptr<CoTool> cotool_;
  std::unique_ptr<LevelOutcomeCache> cache_;
  std::unique_ptr<rewards::ComposedReward> reward_;
  rewards::AnswerFormat default_format_ = rewards::AnswerFormat::kBoxed;
};

// Registers "coger".
void RegisterCogerEnv(runtime::EnvRegistrar& registry);

// "coger" (envs/runtime/env_descriptor.h): the grpo engine's, its config env.coger and the
// recipe's endpoints, gpu, rewards, tools; `allot eval` runs coger_eval.h's command.
const runtime::EnvDescriptor& CogerEnvDescriptor();

// Fills empty prompt texts from prompts.dir and checks every template's placeholders.
Status ResolvePrompts(CogerPrompts& prompts);

// The env_config a learner sends to workers for `config` (a recipe's env.coger, endpoints,
// gpu, rewards and tools): prompt texts resolved and inline, so workers need no files. API
// keys are redacted: give workers their keys through their own environment.
Result<std::string> CogerEnvConfigText(CogerEnvConfig config);

}  // namespace allot::envs::coger
