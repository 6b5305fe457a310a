// The learner's episode ledger: every submitted episode from submission until it closes, which
// worker runs it and how often it was dispatched, and the closed episodes waiting for the trainer
// (a group's episodes held until the group is complete, then delivered together). The ledger, not a
// worker, owns episodes: a worker that dies or returns an episode loses nothing, and a trajectory
// sent twice is counted once.
//
// Workers are plain indices here; the dispatcher (dispatcher.h) owns the connections and calls
// the ledger under its lock. Not thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/status.h"
#include "proto/allot/v1/rollout.pb.h"
#include "rollout/closed_episodes.h"

namespace allot::rollout {

struct FinishedEpisode {
  v1::Trajectory trajectory;
  // Learner policy version at receipt minus the trajectory's policy version (>= 0).
  int64_t policy_lag = 0;
  uint32_t attempts = 0;  // dispatches it took
  std::string worker;     // the connection it came from
};

struct LedgerOptions {
  int64_t max_attempts = 8;  // dispatches before an episode closes as failed
  // Staleness bound in policy versions (-1: none): a trajectory sampled more than this many
  // versions behind the current policy is run again, and closes as FAILURE_REASON_STALE when it
  // has had max_attempts dispatches.
  int64_t max_policy_lag = -1;
  int64_t remember_closed = 1 << 16;  // ids of closed episodes kept for deduplication
};

struct LedgerStats {
  int64_t submitted = 0;
  int64_t finished = 0;  // closed (delivered or held in an incomplete group)
  int64_t pending = 0;
  int64_t open = 0;  // submitted and not yet closed
  int64_t closed_remembered = 0;
  int64_t in_flight = 0;
  int64_t ready = 0;               // closed, waiting for PopReady
  int64_t duplicates_dropped = 0;  // trajectories for recently closed episodes
  int64_t orphans_dropped = 0;     // trajectories for ids unknown or closed and forgotten
  int64_t stale_discarded = 0;     // stale trajectories dropped (their episodes run again)
  int64_t redispatched = 0;        // episodes pending again after a worker loss or return
};

class EpisodeLedger {
 public:
  explicit EpisodeLedger(LedgerOptions options);
  EpisodeLedger(const EpisodeLedger&) = delete;
  EpisodeLedger& operator=(const EpisodeLedger&) = delete;

  // Adds `requests` as pending, all or none: an id that is open, remembered as closed, or twice
  // in `requests` is AlreadyExists. A request that names a policy_version is pinned to it: every
  // dispatch keeps that version (the worker samples it while it holds it); the others are
  // dispatched under the version current then.
  Status Submit(std::vector<v1::EpisodeRequest> requests);

  // The oldest pending episode, now in flight on `worker`: its request with the attempt number
  // set, and `policy_version` unless it is pinned. nullopt when nothing is pending.
  std::optional<v1::EpisodeRequest> Dispatch(int worker, uint64_t policy_version);

  enum class Accepted {
    kClosed,     // the episode closed with this trajectory
    kRequeued,   // stale (beyond max_policy_lag): pending again
    kDuplicate,  // its episode closed recently
    kOrphan,     // no such episode open or remembered
  };
  // A trajectory from `worker_name`. Staleness is its policy version's lag behind `current`.
  Accepted Accept(v1::Trajectory t, uint64_t current, const std::string& worker_name);

  // Closes the open episode `id` as failed with `reason` and `message`; false if it is not open.
  bool Fail(const std::string& id, v1::FailureReason reason, const std::string& message,
            const std::string& worker_name);

  // Episode `id`, in flight on `worker`, came back unrun: pending again, first in line. With
  // `charge`, the dispatch counts against max_attempts (the episode closes as WORKER_LOST past
  // it); without, it does not (the worker was draining or full). False if `id` is not in flight
  // on `worker`.
  bool Return(const std::string& id, int worker, bool charge);

  // `worker` is gone: every episode in flight there is returned (charged). Returns how many.
  int64_t LoseWorker(int worker);

  bool InFlightOn(const std::string& id, int worker) const;
  int64_t in_flight_on(int worker) const;
  bool has_pending() const { return pending_count_ > 0; }
  size_t ready() const { return ready_.size(); }

  // The oldest closed episode not yet taken.
  std::optional<FinishedEpisode> PopReady();
  // The episodes of the oldest ready group (one episode when ungrouped), in group_index order.
  std::vector<FinishedEpisode> PopReadyGroup();

  LedgerStats stats() const;

 private:
  enum class State { kPending, kInFlight };
  struct Entry {
    v1::EpisodeRequest request;
    State state = State::kPending;
    int worker = -1;  // in flight on this worker
    uint32_t attempts = 0;
    bool pinned = false;  // submitted with a policy_version
  };
  struct Group {
    uint32_t size = 0;
    std::vector<FinishedEpisode> held;
  };

  // Takes `entry` off its worker (when in flight).
  void Unassign(const std::string& id, Entry& entry);
  // Pending again at the front, or closed as WORKER_LOST after max_attempts.
  void Requeue(const std::string& id, Entry& entry);
  // Closes and erases the entry of `id`: `entry` is invalid afterwards.
  void Close(const std::string& id, Entry& entry, FinishedEpisode finished);
  FinishedEpisode Failure(const std::string& id, const Entry& entry, v1::FailureReason reason,
                          const std::string& message) const;

  const LedgerOptions options_;
  std::unordered_map<std::string, Entry> open_;
  ClosedEpisodes closed_;
  std::deque<std::string> pending_;  // may hold ids that left the pending state since
  int64_t pending_count_ = 0;        // entries in State::kPending
  std::unordered_map<int, std::unordered_set<std::string>> on_worker_;
  int64_t in_flight_ = 0;
  std::map<std::string, Group> groups_;  // incomplete groups
  std::deque<FinishedEpisode> ready_;
  LedgerStats stats_;
};

}  // namespace allot::rollout
