// DqnLearner: Double-Dueling DQN for the RLoT navigator (RLoT Section 3.3 and 4.2; Mnih et al.
// 2015, van Hasselt et al. 2016, Wang et al. 2016).
//
// It owns the online and target DuelingQNets, Adam, the replay buffer, the epsilon and lr
// schedules and the RNG, and can save and restore all of it bit for bit. Acting uses a plain
// C++ copy of the online weights (NavigatorMlp), refreshed on first use after an update.
//
// Not thread-safe, const methods included (they may refresh the acting copy): one learner
// thread drives it.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "models/navigator_mlp.h"
#include "trainer/dqn/dqn_config.h"
#include "trainer/dqn/replay_buffer.h"

namespace allot::trainer {

class FusedDqnUpdate;

struct UpdateStats {
  double loss = 0;
  double q_mean = 0;
  double td_abs_mean = 0;
};

class DqnLearner {
 public:
  DqnLearner(const DqnConfig& config, uint64_t seed);
  ~DqnLearner();
  DqnLearner(const DqnLearner&) = delete;
  DqnLearner& operator=(const DqnLearner&) = delete;

  // Epsilon-greedy action for one state; decays epsilon by one env step.
  int Act(std::span<const float> state);
  int Greedy(std::span<const float> state) const { return actor().Greedy(state); }
  // Advances the epsilon schedule by `steps` env steps taken elsewhere (rollout workers).
  void AdvanceEpsilon(int64_t steps);
  const models::NavigatorMlp& actor() const;

  // Feeds one env transition (n-step aggregation happens here) into replay.
  Status Observe(const Transition& t);
  // One gradient update if replay holds learn_start transitions; nullopt otherwise.
  std::optional<UpdateStats> MaybeUpdate();
  // The Double-DQN update on a given batch (exposed for tests).
  UpdateStats Update(const SampledBatch& batch);
  // Advances the episode counter and the lr schedule (RLoT: x0.5 every 1000 episodes).
  void EndEpisode();

  // Q-values of the online and target nets for a batch of states [B * state_dim].
  std::vector<float> OnlineQ(std::span<const float> states) const;
  std::vector<float> TargetQ(std::span<const float> states) const;
  // The Double-DQN targets y = r + discount * (1 - done) * Q_target(s', argmax_a Q_online(s', a)).
  std::vector<float> Targets(const SampledBatch& batch) const;

  double epsilon() const { return epsilon_; }
  double lr() const;
  int64_t episodes() const { return episodes_; }
  int64_t env_steps() const { return env_steps_; }
  int64_t updates() const { return updates_; }
  // The fused update's kernels ("avx2", "sse2" or "generic"; see dqn.fused_kernels).
  const char* fused_kernel() const;
  const ReplayBuffer& replay() const { return replay_; }
  const DqnConfig& config() const { return config_; }

  // The online weights as safetensors bytes (what workers and `export` receive).
  Result<std::string> OnlineWeights() const;
  // Copies the online weights into the target net (done every target_update_every updates).
  void SyncTarget();

  // Everything needed for an exact resume, written into / read from a directory.
  Status Save(const std::string& dir) const;
  Status Load(const std::string& dir);

 private:
  struct Nets;
  struct FusedView;
  void RefreshActor() const;
  // Raw pointers to the online/target parameters and Adam's state for the fused path (built on
  // first use, dropped by Load, which replaces the optimizer state).
  const FusedView& Fused();
  UpdateStats FusedUpdate(const SampledBatch& batch);
  void ApplyLrSchedule();
  Status PushToReplay(const Transition& t);

  DqnConfig config_;
  std::unique_ptr<Nets> nets_;
  std::unique_ptr<FusedDqnUpdate> fused_;
  std::vector<std::vector<float>> grads_;  // fused path
  std::unique_ptr<FusedView> fused_view_;
  std::vector<float> fused_y_, fused_td_;
  ReplayBuffer replay_;
  mutable models::NavigatorMlp actor_;
  mutable bool actor_stale_ = true;
  std::mt19937_64 rng_;
  std::deque<Transition> pending_;  // n-step window
  double epsilon_;
  int64_t episodes_ = 0;
  int64_t env_steps_ = 0;
  int64_t updates_ = 0;
};

}  // namespace allot::trainer
