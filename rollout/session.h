// A learner's rollout session: the workers it starts in its own process and the remote ones it
// attaches, the dispatcher between them, and the ids and seeds of every episode it submits.
// Both the GRPO and the DQN learners run their episodes through one.
//
// A submission is a draw: draw n of a run is the same request whichever process makes it, with
// episode i seeded EpisodeSeed(seed, n, i) (core/random.h), so a resumed run re-issues exactly
// the episodes it had not consumed. Ids carry a nonce drawn when the session starts, so that a
// worker that outlived an earlier learner cannot pass its trajectories off as this one's.
//
// Groups are delivered whole (the ledger holds a group until its last episode closes), in
// group_index order. Thread-safe as the dispatcher is.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "rollout/config.h"
#include "rollout/dispatcher.h"
#include "rollout/env_registry.h"
#include "rollout/worker.h"

namespace allot::rollout {

struct SessionOptions {
  RolloutConfig rollout;
  // The envs of in-process workers; must outlive the session.
  const EnvRegistry* registry = nullptr;
  // Names the session's episodes ("<name>-<nonce>-...") and in-process workers ("<name>-worker-i").
  std::string name = "rollout";
  // In-process workers when the recipe names neither in-process nor remote workers.
  int default_in_process = 2;
  uint64_t seed = 0;
  // The staleness bound (episode_ledger.h): a trajectory sampled more than this many versions
  // behind the current policy is run again. -1: none (DQN learns off-policy; GRPO judges each
  // policy segment itself, grpo.max_policy_lag).
  int64_t max_policy_lag = -1;
  // Policy versions a worker that (re)connects is sent: with episodes pinned to a version
  // (SubmitDraw), at least the versions they may name.
  size_t policy_history = 1;
};

// The seed of episode `index` of draw `draw` in a run seeded `seed`.
uint64_t EpisodeSeed(uint64_t seed, int64_t draw, uint32_t index);

class RolloutSession {
 public:
  static Result<std::unique_ptr<RolloutSession>> Start(SessionOptions options);
  // Stops the dispatcher, then the in-process workers.
  ~RolloutSession();
  RolloutSession(const RolloutSession&) = delete;
  RolloutSession& operator=(const RolloutSession&) = delete;

  // Submits draw `draw`: `size` copies of `base` (its env, config, item, sampling...) with ids,
  // group fields and seeds set (the sampling seed too, when `base` has sampling parameters). A
  // group of size 1 is still a group. `policy_version` > 0 pins its episodes to that version
  // (published earlier, within policy_history of the newest); 0: the version current at each
  // dispatch. Returns the group id.
  Result<std::string> SubmitDraw(int64_t draw, uint32_t size, const v1::EpisodeRequest& base,
                                 uint64_t policy_version = 0);
  // The draw a group id of this session names; nullopt for another id.
  std::optional<int64_t> DrawOf(const std::string& group_id) const;

  // The next complete group, in group_index order; empty after `timeout`.
  std::vector<FinishedEpisode> NextGroup(std::chrono::milliseconds timeout);
  Status Publish(envs::runtime::PolicySnapshot policy);
  uint64_t policy_version() const { return dispatcher_->policy_version(); }
  DispatcherStats stats() const { return dispatcher_->stats(); }
  std::string DescribeUnconnected() const { return dispatcher_->DescribeUnconnected(); }
  int in_process_workers() const { return static_cast<int>(servers_.size()); }

 private:
  RolloutSession() = default;
  SessionOptions options_;
  std::string prefix_;  // "<name>-<nonce>-g"
  std::vector<std::unique_ptr<WorkerServer>> servers_;
  std::unique_ptr<Dispatcher> dispatcher_;
};

}  // namespace allot::rollout
