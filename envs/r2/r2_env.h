// The R2-Reasoner env (R2-Reasoner Sec. 3-4): the Task Decomposer policy writes a numbered
// subtask list (Sec. 4.1), the Subtask Allocator policy gives each subtask a (difficulty, model)
// from M_pool (Sec. 4.2), the assigned models solve the subtasks in order, each seeing the
// earlier results, and the results are integrated into the final answer (Sec. 4.4 steps 1-4).
// The optional Procedural Review Mechanism lets M_strong check, and refine, the result of every
// subtask assigned below M_thresh (Sec. 4.4). The reward is final correctness (Eq. 1); the API
// cost (US cents) and energy (J) of the task are reported in info (Sec. 5.1).
//
// The trajectory is the policy's conversation: the decomposer prompt (masked), the
// decomposition (policy, source "decomposer@<endpoint>"), the allocator prompt (masked), the
// allocation (policy, source "allocator@<endpoint>"), then with r2.record_execution the
// executors' results as masked context. The two roles are two models (Sec. 4.3): with a policy
// snapshot of one adapter per role (PolicySnapshot::role_adapters), each turn is sampled from
// its role's served adapter and its segment carries that adapter's version. A malformed or runaway
// decomposition or allocation is no failure: it executes nothing and scores 0, so the policy learns
// the format.
//
// Thread-safe: episodes run concurrently on one env.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "envs/r2/r2_config.h"
#include "envs/r2/r2_prompts.h"
#include "envs/r2/subtask_plan.h"
#include "envs/runtime/env.h"
#include "envs/runtime/env_descriptor.h"
#include "envs/runtime/episode.h"
#include "rewards/answer_extractor.h"
#include "rewards/composed_reward.h"

namespace allot::llm {
class Client;
}

namespace allot::envs::r2 {

// The role tags of the two policies' segments (Segment.source = "<role>@<endpoint>").
inline constexpr const char* kDecomposerRole = "decomposer";
inline constexpr const char* kAllocatorRole = "allocator";

// r2.integrator's value for "no integration call: the last subtask's result is A_final".
inline constexpr const char* kLastResult = "last_result";

// A dataset item (datasets/example_json.h): the question with its options, the answer and the
// format it is graded in.
struct R2Item {
  std::string question;
  std::string reference;
  rewards::AnswerFormat format = rewards::AnswerFormat::kBoxed;
};
Result<R2Item> ParseR2Item(const std::string& json, rewards::AnswerFormat default_format);

// The outcome of executing an allocation (Sec. 4.4 steps 3-4).
struct Execution {
  std::vector<std::string> results;  // r_j^final per subtask
  std::vector<bool> reviewed;        // whether PRM_Verify ran on subtask j
  std::vector<bool> refined;         // whether M_strong replaced r_j
  std::string final_answer;          // the integration's text (kLastResult: the last result)
  std::string integrator;
  runtime::Failure failure;
};

class R2Env : public runtime::Env {
 public:
  // `client`: the endpoint pool; null = built from config.endpoints.
  static Result<std::unique_ptr<R2Env>> Create(R2EnvConfig config,
                                               std::shared_ptr<llm::Client> client = nullptr);
  // From env_config text: YAML or JSON of R2EnvConfig, or a whole recipe (its env.r2,
  // endpoints, gpu and rewards sections; the rest is the trainer's).
  static Result<std::unique_ptr<R2Env>> FromConfigText(const std::string& text);
  ~R2Env() override;

  Result<runtime::Trajectory> Run(const runtime::EpisodeInput& input) override;

  // Runs `subtasks` on `allocation` in order, with the review, then integrates. Every call is
  // accounted in `episode`; with `record`, each result is appended to `conv` as masked context.
  // Used by the env and by the data tools (Eq. 4's C(d), the grouped search's Acc(M_A)).
  Execution Execute(runtime::Episode& episode, const std::string& question,
                    const std::vector<std::string>& subtasks,
                    const std::vector<Assignment>& allocation,
                    runtime::Conversation* record = nullptr) const;

  // The prompt of subtask `index` (0-based) after the results of the subtasks before it
  // (Sec. 4.4 step 3); fewer results than `index` (none: the data tools' baseline) is allowed.
  Result<std::string> SubtaskPrompt(const std::string& question,
                                    const std::vector<std::string>& subtasks, size_t index,
                                    const std::vector<std::string>& results) const;
  // The question put to one model of the pool alone (the single-model baselines of Table 1).
  Result<std::string> SinglePrompt(const std::string& question) const;

  // M_pool, smallest model first, and each model's rank in it (-1 when absent).
  const std::vector<std::string>& pool() const { return pool_; }
  int Rank(const std::string& model) const;
  const R2EnvConfig& config() const { return config_; }
  llm::Client& client() const { return *client_; }
  rewards::AnswerFormat default_format() const { return default_format_; }

  // YAML a worker rebuilds this env from (prompt texts inline; keys by variable name only).
  std::string ConfigText() const;

  // The allocator prompt for `k` subtasks (the pool listed with its groups).
  Result<std::string> AllocatorPrompt(size_t k) const;

 private:
  explicit R2Env(R2EnvConfig config) : config_(std::move(config)) {}

  R2EnvConfig config_;
  std::shared_ptr<llm::Client> client_;
  std::unique_ptr<rewards::ComposedReward> reward_;
  std::vector<std::string> pool_;
  rewards::AnswerFormat default_format_ = rewards::AnswerFormat::kBoxed;
};

// Registers "r2".
void RegisterR2Env(runtime::EnvRegistrar& registry);

// "r2" (envs/runtime/env_descriptor.h): the grpo engine's, its config env.r2 and the
// recipe's endpoints, gpu, rewards; `allot eval` runs r2_eval.h's command.
const runtime::EnvDescriptor& R2EnvDescriptor();

}  // namespace allot::envs::r2
