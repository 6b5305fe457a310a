// The learner-side dispatcher: the episode ledger, scheduling across workers by free capacity,
// GRPO group tracking, the staleness bound, re-dispatch on worker loss, deduplication by
// episode id, policy publishing, and the queue of finished trajectories the trainer reads.
//
// Thread-safe. One connection thread per worker (plus a writer per live stream) and one
// heartbeat thread. In-process workers are connected through the same stream protocol over
// an in-process channel (AddChannel), so single-machine runs take the same path.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/status.h"
#include "proto/allot/v1/rollout.grpc.pb.h"
#include "rollout/closed_episodes.h"
#include "rollout/config.h"
#include "rollout/env.h"

namespace allot::rollout {

struct FinishedEpisode {
  v1::Trajectory trajectory;
  // 1, or stale_weight_decay^(lag - max_policy_lag) under stale_policy "downweight".
  double weight = 1.0;
  // Learner policy version at receipt minus the trajectory's policy version (>= 0).
  int64_t policy_lag = 0;
  uint32_t attempts = 0;  // dispatches it took
  std::string worker;     // the connection it came from
};

struct DispatcherStats {
  int64_t submitted = 0;
  int64_t finished = 0;  // closed in the ledger (delivered or held in an incomplete group)
  int64_t pending = 0;
  int64_t open = 0;               // episodes in the ledger: submitted and not yet closed
  int64_t closed_remembered = 0;  // ids of closed episodes kept for deduplication
  int64_t in_flight = 0;
  int64_t ready = 0;  // finished, waiting for Next()
  int64_t duplicates_dropped = 0;  // trajectories for recently closed episodes
  int64_t orphans_dropped = 0;     // trajectories for ids unknown or closed and forgotten
  int64_t stale_discarded = 0;
  int64_t stale_downweighted = 0;
  int64_t redispatched = 0;  // episodes sent again after a worker loss, drop or return
  int64_t rejected = 0;
  int64_t invalid_trajectories = 0;
  int64_t workers_connected = 0;
  int64_t worker_losses = 0;  // streams ended or workers declared dead
  int64_t bytes_received = 0;
};

class Dispatcher {
 public:
  // Connects to every address in config.workers (reconnecting with backoff).
  static Result<std::unique_ptr<Dispatcher>> Create(const DispatcherConfig& config);
  ~Dispatcher();
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  Status AddWorker(const std::string& address);
  // A ready channel, e.g. WorkerServer::InProcessChannel(). `name` labels it in stats and logs.
  void AddChannel(std::shared_ptr<grpc::Channel> channel, const std::string& name);

  // Adds episodes to the ledger. The dispatcher sets policy_version and attempt. An id already
  // in the ledger is AlreadyExists; an invalid request is InvalidArgument (nothing is added).
  Status Submit(v1::EpisodeRequest request);
  Status Submit(std::vector<v1::EpisodeRequest> requests);

  // Makes `policy` current (its version must exceed the current one) and sends it to every
  // worker, now and on each reconnect.
  Status PublishPolicy(PolicySnapshot policy);
  uint64_t policy_version() const;

  // The next finished episode, or nullopt after `timeout`.
  std::optional<FinishedEpisode> Next(std::chrono::milliseconds timeout);
  // With deliver_groups: one complete GRPO group (a single episode when ungrouped).
  std::vector<FinishedEpisode> NextGroup(std::chrono::milliseconds timeout);

  DispatcherStats stats() const;
  // Waits until `n` workers are connected or the timeout passes.
  bool WaitForWorkers(int n, std::chrono::milliseconds timeout);
  // The workers not connected now, each with why its last Hello failed, e.g. "10.0.0.21:50051
  // (UNAVAILABLE: Socket closed)"; "" when every worker is connected. A refused TLS handshake
  // (no valid client certificate) looks like an unreachable worker until then, so the trainers'
  // timeouts name them.
  std::string DescribeUnconnected() const;
  void Shutdown();

 private:
  // An episode leaves the ledger when it closes; its id goes to closed_ (bounded).
  enum class State { kPending, kInFlight, kDone };
  struct Entry {
    std::string id;
    v1::EpisodeRequest request;
    State state = State::kPending;
    int conn = -1;  // in flight on this connection
    uint32_t attempts = 0;
  };
  struct Group {
    uint32_t size = 0;
    std::vector<FinishedEpisode> held;
  };
  struct Connection {
    std::string name;
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<v1::RolloutWorker::Stub> stub;
    std::thread thread;
    std::condition_variable cv;  // its writer
    // Under mu_:
    bool connected = false;
    bool draining = false;
    bool full = false;
    uint32_t capacity = 0;
    uint64_t session = 0;
    std::string hello_error;  // why the last Hello failed ("" once connected)
    grpc::ClientContext* ctx = nullptr;
    int missed = 0;
    std::unordered_set<std::string> assigned;
    std::deque<v1::EpisodeRequest> to_send;
    std::vector<std::string> acks;
    std::shared_ptr<const std::vector<v1::PolicyChunk>> policy_chunks;
    size_t policy_next = 0;
  };

  explicit Dispatcher(DispatcherConfig config);
  void AddConnection(std::shared_ptr<grpc::Channel> channel, const std::string& name);
  void ConnectionLoop(int index);
  void WriterLoop(int index, uint64_t session,
                  grpc::ClientReaderWriter<v1::LearnerMessage, v1::WorkerMessage>* stream);
  void HeartbeatLoop();
  void HandleMessage(int index, std::vector<v1::Trajectory> done,
                     std::vector<std::string> invalid_ids, const v1::WorkerMessage& msg);
  // Under mu_:
  void AcceptLocked(int index, v1::Trajectory t);
  // Closes and erases the entry: `entry` is invalid afterwards.
  void CloseLocked(Entry& entry, FinishedEpisode finished);
  void RequeueLocked(const std::string& id, Entry& entry, bool front);
  void LoseConnectionLocked(Connection& conn);
  void ScheduleLocked();
  bool SleepUnlessStopping(std::chrono::milliseconds d);

  const DispatcherConfig config_;
  mutable std::mutex mu_;
  std::condition_variable ready_cv_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  std::unordered_map<std::string, Entry> ledger_;  // open episodes only
  ClosedEpisodes closed_;
  std::deque<std::string> pending_;  // may hold ids that left the pending state since
  int64_t pending_count_ = 0;        // entries in State::kPending
  std::deque<FinishedEpisode> ready_;
  std::map<std::string, Group> groups_;
  std::vector<std::unique_ptr<Connection>> conns_;
  std::shared_ptr<const PolicySnapshot> policy_;
  std::shared_ptr<const std::vector<v1::PolicyChunk>> policy_chunks_;
  int64_t in_flight_ = 0;
  DispatcherStats stats_;
  std::thread heartbeat_;
};

}  // namespace allot::rollout
