// DqnTrainer: the single-process navigator training loop: act epsilon-greedily in the env,
// store transitions, update once per env step when replay is full, checkpoint every N episodes
// (RLoT: 10), and log episode return, steps, the action histogram, Q mean, TD error, epsilon,
// lr and the per-step process reward.
//
// Resuming from a checkpoint continues bit for bit: N + resume + N episodes give the same
// weights as 2N uninterrupted ones.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "envs/synthetic/chain_mdp.h"
#include "models/navigator_mlp.h"
#include "trainer/dqn/dqn_config.h"

namespace allot {
class MetricsWriter;
class ProgressBar;
}  // namespace allot

namespace allot::trainer {

class DqnLearner;

// One greedy episode of the chain with `navigator`; returns its return, and the applied
// actions in `actions` when given.
double GreedyChainReturn(const envs::ChainMdpConfig& env, const models::NavigatorMlp& navigator,
                         std::vector<int>* actions = nullptr);

struct DqnRunOptions {
  DqnConfig dqn;
  envs::ChainMdpConfig env;
  int64_t total_episodes = 3000;
  int64_t checkpoint_every = 10;  // episodes
  int keep_last = 3;
  int log_every = 1;
  uint64_t seed = 0;
  std::string checkpoint_dir;  // empty: no checkpoints
  // dqn.distributed: the env the workers run ("chain" or "rlot"), its env_config text (empty:
  // the chain's, from `env`), and the dataset items episodes cycle through (empty for chain).
  std::string env_name = "chain";
  std::string env_config;
  std::vector<std::string> dataset_items;
};

struct DqnRunSummary {
  int64_t episodes = 0;
  double mean_return_last_100 = 0;
  double greedy_return = 0;  // one greedy episode after training
  std::array<int64_t, 5> greedy_actions{};
};

class DqnTrainer {
 public:
  explicit DqnTrainer(DqnRunOptions options);
  ~DqnTrainer();

  // Restores the latest valid checkpoint, if any; returns the episode it resumes at.
  Result<int64_t> Resume();
  // Runs until total_episodes. `metrics` and `progress` may be null.
  Result<DqnRunSummary> Run(MetricsWriter* metrics, ProgressBar* progress);
  // Runs one greedy episode and returns its return (the trained policy's quality).
  double GreedyReturn(std::vector<int>* actions = nullptr) const;

  DqnLearner& learner() { return *learner_; }

 private:
  Status SaveCheckpoint();

  DqnRunOptions options_;
  std::unique_ptr<DqnLearner> learner_;
  envs::ChainMdp env_;
};

}  // namespace allot::trainer
