// The DeepTool env (DeepTool Sec. 2.2-2.3): the policy writes steps in the strict interleaved
// schema (Sec. 2.2, Schema 1 and 2; our tags in expert_trajectory.h and rewards/action_reward.h)
//   intermediate step:  <think>..</think> <code>..</code>, then the env's <observation>..
//                       </observation>
//   terminal step:      <think>..</think> <answer>..</answer>
// Code runs in the sandboxed execute_python tool (tools/); its output comes back as the
// observation, a masked kTool segment. Every generated step is a trainable policy segment whose
// `step` is its 1-based index.
//
// Rewards: each step's action-centric process reward (Eq. 6-8, rewards/action_reward.h) against
// the expert's step of the same index goes into Trajectory::step_rewards (the GRPO learner's
// step advantages, Eq. 9); the outcome (the answer step graded against the reference) is
// Trajectory::reward. rewards.terms weighs `action` and `accuracy`; other terms are errors.
//
// Modes: `stepwise` is the paper's RL instance (Sec. 2.3.1, Eq. 5): the ground-truth history
// is context, the policy writes one step, and it is scored against the expert's next step
// without running it. `interleaved` runs whole episodes until the answer step.
//
// Endings: a malformed step, runaway output and the limits on steps, code runs and tokens are
// the policy's doing; by default (format_errors: score) they end the episode scored, the gate of
// Eq. 7 at 0 and the reason in info["failure"], so that the learner, which drops failed
// episodes, still trains on them; format_errors: fail makes them format_error failures.
// Failures proper: the sandbox unable to run code (tool), the endpoint (endpoint), a bad item
// or an instance longer than max_prompt_tokens (env), the deadline (timeout).
//
// Thread-safe: episodes run concurrently on one env.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "envs/deeptool/deeptool_config.h"
#include "envs/deeptool/deeptool_item.h"
#include "envs/deeptool/expert_trajectory.h"
#include "envs/runtime/env.h"
#include "envs/runtime/env_descriptor.h"
#include "rewards/action_reward.h"
#include "rewards/answer_extractor.h"
#include "rewards/grader.h"
#include "tools/tool_registry.h"

namespace allot::llm {
class Client;
}

namespace allot::envs::deeptool {

// What the sandbox's execute_python result becomes in the context: stdout, then stderr (the
// traceback), then a timeout line; "(no output)" when all are empty; cut at max_chars.
std::string ObservationText(const tools::ToolResult& result, size_t max_chars);

class DeepToolEnv : public runtime::Env {
 public:
  // `client`: the endpoint pool; null = built from config.endpoints. `tools`: null = built from
  // config.tools (must offer execute_python).
  static Result<std::unique_ptr<DeepToolEnv>> Create(
      DeepToolEnvConfig config, std::shared_ptr<llm::Client> client = nullptr,
      std::shared_ptr<tools::ToolRegistry> tools = nullptr);
  // From env_config text: YAML or JSON of DeepToolEnvConfig, or a whole recipe (its
  // env.deeptool, endpoints, gpu, rewards and tools sections).
  static Result<std::unique_ptr<DeepToolEnv>> FromConfigText(const std::string& text);
  ~DeepToolEnv() override;

  Result<runtime::Trajectory> Run(const runtime::EpisodeInput& input) override;

  const DeepToolEnvConfig& config() const { return config_; }
  // YAML a worker rebuilds this env from (the prompt text inline).
  std::string ConfigText() const;

 private:
  explicit DeepToolEnv(DeepToolEnvConfig config) : config_(std::move(config)) {}

  DeepToolEnvConfig config_;
  std::shared_ptr<llm::Client> client_;
  std::shared_ptr<tools::ToolRegistry> tools_;
  std::unique_ptr<rewards::ActionCentricReward> action_reward_;
  rewards::GradeOptions grade_;
  rewards::AnswerFormat default_format_ = rewards::AnswerFormat::kBoxed;
  double action_weight_ = 0.0;  // 0 when rewards.terms has no action term
  double accuracy_weight_ = 0.0;
  bool has_action_ = false;
  bool has_accuracy_ = false;
};

// Registers "deeptool".
void RegisterDeepToolEnv(runtime::EnvRegistrar& registry);

// "deeptool" (envs/runtime/env_descriptor.h): the grpo engine's, its config env.deeptool and the
// recipe's endpoints, gpu, rewards, tools; `allot eval` runs deeptool_eval.h's command.
const runtime::EnvDescriptor& DeepToolEnvDescriptor();

// Fills an empty prompt text from prompts.dir and checks its placeholders.
Status ResolvePrompts(DeepToolPrompts& prompts);

}  // namespace allot::envs::deeptool
