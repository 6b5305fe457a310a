// RlotEnv: RLoT's LLM-backed logic-block environment (RLoT Sec. 3-4; notes.md), on the shared
// episode runtime (envs/runtime).
//
// A navigator picks one of five logic blocks per decision from the state, the LLM's 7-aspect
// self-evaluation of the newest step (self_evaluation.h; before the first block the zero state,
// or with evaluate_problem the evaluation of the problem itself):
//   Reason     one next step.
//   Decompose  list `### Subtask<i>: ...`, solve each with the earlier results visible, then
//              summarize; only the summary joins the chain.
//   Debate     propose `num_plans` plans, compare them (`The most promising plan is
//              Plan[INDEX]`, plan 1 when that does not parse), reason one step along it.
//   Refine     rewrite the newest step in place. Chosen first, it becomes Reason.
//   Terminate  answer in the dataset's format; the outcome (1 correct, 0 wrong) is the reward.
// After every other block the LLM is asked whether the answer is already there (yes/no); on
// yes it answers and the episode ends with the outcome. Otherwise the step's reward is the
// step scorer's score of the chain so far (the PRM's last-step P(+)), and the self-evaluation
// gives the next state. At most `max_blocks` blocks: the next decision is Terminate. With
// step_reward: shaped (rlot_config.h) that score is a potential instead: a block earns
// gamma * score(new chain) - score(old chain), the end outcome - score(last chain).
//
// Every decision is one DQN transition (state, action, reward, next_state, done). The action
// stored is the one the navigator chose, before the Refine->Reason and forced-Terminate rules
// (the reference code's replay does so); the applied blocks are in info["blocks"].
//
// The navigator comes from the caller: Run() acts epsilon-greedily with the Q-net of
// input.policy and input.sampling.epsilon (uniformly at random before any policy exists; greedy
// when epsilon is unset), RunWith() takes any chooser. LLM calls are text in, text out through
// the runtime's Episode (accounted per endpoint, limited, cancellable); the LLM is not trained
// here, so the trajectory holds no token segments. Failures (endpoint errors, runaway output,
// limits, a failing step scorer) end the episode with a failure reason, never the host.
//
// Thread-safe: episodes run concurrently.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "envs/rlot/logic_block.h"
#include "envs/rlot/rlot_config.h"
#include "envs/rlot/rlot_prompts.h"
#include "envs/rlot/self_evaluation.h"
#include "envs/runtime/env.h"
#include "envs/runtime/env_descriptor.h"
#include "envs/runtime/navigator_cache.h"
#include "llm/endpoint_config.h"
#include "models/navigator_mlp.h"
#include "rewards/prm_reward.h"
#include "rewards/step_scorer.h"

namespace allot::llm {
class Client;
class HttpTransport;
}  // namespace allot::llm

namespace allot::envs::rlot {

// Picks the next block (0..4) in `state`; `decision` counts from 1.
using BlockChooser = std::function<int(const State& state, int decision)>;

class RlotEnv : public runtime::Env {
 public:
  // Builds the env. `client` and `scorer` default to ones built from config.endpoints
  // (the PRM, or the rule verifier, as config.step_scorer says).
  static Result<std::unique_ptr<RlotEnv>> Create(
      RlotEnvConfig config, std::shared_ptr<llm::Client> client = nullptr,
      std::shared_ptr<const rewards::StepScorer> scorer = nullptr);
  ~RlotEnv() override;

  Result<runtime::Trajectory> Run(const runtime::EpisodeInput& input) override;
  // One episode with the blocks `choose` picks. `reads_state`: false for a chooser that ignores
  // the state (a fixed sequence), which then gets no evaluation of the problem
  // (config.evaluate_problem).
  Result<runtime::Trajectory> RunWith(const runtime::EpisodeInput& input,
                                      const BlockChooser& choose, bool reads_state = true);
  // The zero-shot CoT baseline (RLoT Sec. 4.1): one call, "Let's think step by step", the
  // answer in the dataset's format; rewards "outcome" only, info["answer"] for the vote. No
  // blocks, no PRM. NotFound when prompts_dir has no zero_shot_cot.txt.
  Result<runtime::Trajectory> RunChainOfThought(const runtime::EpisodeInput& input);

  const RlotEnvConfig& config() const { return config_; }

 private:
  RlotEnv(RlotEnvConfig config, RlotPrompts prompts, std::shared_ptr<llm::Client> client,
          std::shared_ptr<llm::HttpTransport> http,
          std::shared_ptr<const rewards::StepScorer> scorer);
  RlotEnvConfig config_;
  RlotPrompts prompts_;
  std::shared_ptr<llm::HttpTransport> http_;  // the PRM's, when built here
  std::shared_ptr<llm::Client> client_;
  std::shared_ptr<const rewards::StepScorer> scorer_;  // injected, or the rule verifier
  // The PRM endpoint built from config (step_scorer: prm): a scorer per episode, accounted.
  rewards::PrmRewardConfig prm_config_;
  std::optional<llm::EndpointConfig> prm_endpoint_;
  runtime::NavigatorCache navigators_{"rlot", kStateDim, kNumLogicBlocks};
};

// env_config (YAML or JSON of RlotEnvConfig) -> env; registers "rlot".
void RegisterRlotEnv(runtime::EnvRegistrar& registrar);

// "rlot" (envs/runtime/env_descriptor.h): the dqn engine's; its recipe completion
// (rlot_recipe.h) reads env.rlot, endpoints and rewards.prm (and dqn.gamma, the engine's own).
// The trained navigator is evaluated by the trainer (trainer/dqn/navigator_eval.h).
const runtime::EnvDescriptor& RlotEnvDescriptor();

}  // namespace allot::envs::rlot
