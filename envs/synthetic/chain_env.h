// ChainEnv: the chain MDP (chain_mdp.h) as a rollout env, so that the navigator can be trained
// actor/learner style (Ape-X, Horgan et al. 2018) over the rollout protocol.
//
// An episode acts epsilon-greedily with the navigator weights of the host's policy snapshot
// (NavigatorMlp over the safetensors bytes the learner publishes); before the first update
// arrives it acts uniformly at random. Epsilon comes from `sampling.epsilon` (the request's own
// `epsilon` field; unset: greedy), and the episode's RNG seed from `seed`.
//
// A plain-C++ env (envs/runtime/env.h): the rollout worker runs it behind its adapter. The
// trajectory carries one DQN transition per step, the combined return as `reward`, the outcome and
// process-reward terms, and the block sequence in info["blocks"].
//
// Thread-safe: episodes run concurrently; parsed navigators are cached per policy version.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "envs/runtime/env.h"
#include "envs/runtime/env_descriptor.h"
#include "envs/runtime/navigator_cache.h"
#include "envs/synthetic/chain_mdp.h"
#include "models/navigator_mlp.h"

namespace allot::envs {

class ChainEnv : public runtime::Env {
 public:
  explicit ChainEnv(ChainMdpConfig config)
      : config_(std::move(config)),
        navigators_("chain", ChainMdp::kStateDim, ChainMdp::kNumActions) {}

  // env_config: YAML or JSON of ChainMdpConfig (empty: the defaults).
  static Result<std::unique_ptr<ChainEnv>> Create(const std::string& env_config);

  Result<runtime::Trajectory> Run(const runtime::EpisodeInput& input) override;

 private:
  const ChainMdpConfig config_;
  runtime::NavigatorCache navigators_;
};

// The env_config text that makes a worker build `config` (JSON).
std::string ChainEnvConfigText(const ChainMdpConfig& config);

// Registers "chain" (the rollout worker's EnvRegistry is a registrar).
void RegisterChainEnv(runtime::EnvRegistrar& registry);

// "chain" (envs/runtime/env_descriptor.h): the dqn engine's, configured by env.chain alone; the
// trained navigator is evaluated by the trainer (trainer/dqn/navigator_eval.h).
const runtime::EnvDescriptor& ChainEnvDescriptor();

}  // namespace allot::envs
