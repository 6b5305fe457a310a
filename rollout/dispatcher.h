// The learner-side dispatcher: the connections to rollout workers around the episode ledger
// (episode_ledger.h): scheduling across workers by free capacity, heartbeats, reconnects with
// backoff, policy publishing, and handing the ledger's finished episodes to the trainer.
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
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"
#include "envs/runtime/env.h"
#include "proto/allot/v1/rollout.grpc.pb.h"
#include "rollout/config.h"
#include "rollout/episode_ledger.h"

namespace allot::rollout {

struct DispatcherStats {
  int64_t submitted = 0;
  int64_t finished = 0;  // closed in the ledger (delivered or held in an incomplete group)
  int64_t pending = 0;
  int64_t open = 0;               // episodes in the ledger: submitted and not yet closed
  int64_t closed_remembered = 0;  // ids of closed episodes kept for deduplication
  int64_t in_flight = 0;
  int64_t ready = 0;               // finished, waiting for Next()
  int64_t duplicates_dropped = 0;  // trajectories for recently closed episodes
  int64_t orphans_dropped = 0;     // trajectories for ids unknown or closed and forgotten
  int64_t stale_discarded = 0;
  int64_t redispatched = 0;  // episodes sent again after a worker loss, drop or return
  int64_t rejected = 0;
  int64_t invalid_trajectories = 0;
  int64_t workers_connected = 0;
  int64_t worker_losses = 0;  // streams ended or workers declared dead
  int64_t bytes_received = 0;
};

// What the learner decides, not the recipe.
struct DispatcherOptions {
  int64_t max_policy_lag = -1;  // the ledger's staleness bound (episode_ledger.h; -1: none)
  // Policy versions a worker that connects is sent, the newest last: the versions episodes
  // pinned to older ones (EpisodeLedger::Submit) may still sample.
  size_t policy_history = 1;
};

class Dispatcher {
 public:
  // Connects to every address in config.workers (reconnecting with backoff).
  static Result<std::unique_ptr<Dispatcher>> Create(const DispatcherConfig& config,
                                                    DispatcherOptions options = {});
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
  Status PublishPolicy(envs::runtime::PolicySnapshot policy);
  uint64_t policy_version() const;

  // The next finished episode, or nullopt after `timeout`.
  std::optional<FinishedEpisode> Next(std::chrono::milliseconds timeout);
  // One complete group, in group_index order (a single episode when ungrouped).
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
    std::deque<v1::EpisodeRequest> to_send;
    std::vector<std::string> acks;
    std::shared_ptr<const std::vector<v1::PolicyChunk>> policy_chunks;
    size_t policy_next = 0;
  };

  Dispatcher(DispatcherConfig config, DispatcherOptions options);
  void AddConnection(std::shared_ptr<grpc::Channel> channel, const std::string& name);
  void ConnectionLoop(int index);
  void WriterLoop(int index, uint64_t session,
                  grpc::ClientReaderWriter<v1::LearnerMessage, v1::WorkerMessage>* stream);
  void HeartbeatLoop();
  void HandleMessage(int index, std::vector<v1::Trajectory> done,
                     std::vector<std::string> invalid_ids, const v1::WorkerMessage& msg);
  // Under mu_:
  void LoseConnectionLocked(int index);
  void ScheduleLocked();
  bool SleepUnlessStopping(std::chrono::milliseconds d);

  const DispatcherConfig config_;
  const DispatcherOptions options_;
  mutable std::mutex mu_;
  std::condition_variable ready_cv_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  EpisodeLedger ledger_;
  std::vector<std::unique_ptr<Connection>> conns_;
  std::shared_ptr<const envs::runtime::PolicySnapshot> policy_;
  std::shared_ptr<const std::vector<v1::PolicyChunk>> policy_chunks_;
  // The last options_.policy_history publications, oldest first.
  std::deque<std::pair<uint64_t, std::shared_ptr<const std::vector<v1::PolicyChunk>>>> recent_;
  DispatcherStats stats_;  // the connections' counts; the ledger keeps its own
  std::thread heartbeat_;
};

}  // namespace allot::rollout
