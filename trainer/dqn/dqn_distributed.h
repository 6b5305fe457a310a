// DistributedDqnTrainer: the navigator's actor/learner split (Ape-X, Horgan et al. 2018) over
// the rollout protocol.
//
// Rollout workers (started inside this process, `rollout.in_process_workers`, and/or remote ones
// at `rollout.dispatcher.workers`; with neither, two in-process workers) run chain episodes with
// the navigator weights the learner last published, acting epsilon-greedily with the learner's
// current epsilon (sent with each episode request). Their transitions come back in the trajectories
// and stream into the learner's replay buffer; the learner updates once per transition (RLoT's one
// update per env step), advances epsilon by the steps the workers took, and publishes new weights
// every `dqn.publish_every` updates. Episodes in flight keep acting with older weights: DQN is
// off-policy, so no staleness bound. A failed episode is trained on when it is a policy failure
// its env scored (its failing decision terminal, with the env's failure reward, as RLoT's); any
// other failure is dropped and replaced, and every failure is counted by reason
// (rollout/failure_kind.h).
//
// Checkpoints hold the learner as in the single-process trainer; a resumed run continues from
// the saved learner (episodes in flight at the crash are simply run again). Unlike the
// single-process path it is not bit-for-bit reproducible: which worker finishes first varies.
//
// Not thread-safe: one thread calls Resume and Run.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "rollout/config.h"
#include "trainer/dqn/dqn_trainer.h"

namespace allot {
class MetricsWriter;
class ProgressBar;
}  // namespace allot

namespace allot::rollout {
class EnvRegistry;
class RolloutSession;
}  // namespace allot::rollout

namespace allot::trainer {

class DqnLearner;

class DistributedDqnTrainer {
 public:
  static constexpr int kDefaultActors = 2;

  // `rollout` gives the in-process workers, their config, and the dispatcher (with the
  // addresses of remote workers).
  explicit DistributedDqnTrainer(DqnRunOptions options, rollout::RolloutConfig rollout = {});
  ~DistributedDqnTrainer();
  DistributedDqnTrainer(const DistributedDqnTrainer&) = delete;
  DistributedDqnTrainer& operator=(const DistributedDqnTrainer&) = delete;

  Result<int64_t> Resume();
  // Run fails when no episode finishes for this long (default 120 s), e.g. no worker connects.
  void set_idle_timeout(std::chrono::milliseconds t) { idle_timeout_ = t; }
  // Starts the workers and the dispatcher, runs until total_episodes, shuts them down.
  Result<DqnRunSummary> Run(MetricsWriter* metrics, ProgressBar* progress);

  DqnLearner& learner() { return *learner_; }
  // Weight publications and failed episodes of the last Run.
  int64_t publications() const { return publications_; }
  int64_t failed_episodes() const { return failed_episodes_; }
  // Failed episodes left out of replay (every failure but a scored policy failure, which is
  // trained on: rollout/failure_kind.h), and every failed episode by reason ("format_error").
  int64_t dropped_failures() const { return dropped_failures_; }
  const std::map<std::string, int64_t>& failures() const { return failures_; }
  // Episodes dropped because a transition was malformed (wrong state size, action out of
  // range, non-finite value); the run goes on without them.
  int64_t malformed_episodes() const { return malformed_episodes_; }
  const std::vector<std::string>& worker_ids() const { return worker_ids_; }

 private:
  Status Publish(rollout::RolloutSession& session);
  Status SaveCheckpoint();

  DqnRunOptions options_;
  rollout::RolloutConfig rollout_;
  std::unique_ptr<DqnLearner> learner_;
  std::unique_ptr<rollout::EnvRegistry> registry_;
  int64_t publications_ = 0;
  int64_t failed_episodes_ = 0;
  int64_t dropped_failures_ = 0;
  std::map<std::string, int64_t> failures_;
  int64_t malformed_episodes_ = 0;
  uint64_t last_version_ = 0;
  std::chrono::milliseconds idle_timeout_{120000};
  std::vector<std::string> worker_ids_;
};

}  // namespace allot::trainer
