// The rollout worker's gRPC service: accepts episodes, runs them on a bounded thread pool,
// keeps finished trajectories until the learner acknowledges them, and applies policy updates
// between episodes.
//
// Thread-safe. One Rollout stream is active at a time; a new stream supersedes the old one
// (its unacknowledged trajectories are sent again on the new stream).
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "proto/allot/v1/rollout.grpc.pb.h"
#include "rollout/config.h"
#include "rollout/env_registry.h"
#include "rollout/metrics.h"

namespace allot::rollout {

class WorkerService final : public v1::RolloutWorker::Service {
 public:
  // `registry` must outlive the service.
  WorkerService(WorkerConfig config, const EnvRegistry* registry);
  ~WorkerService() override;
  WorkerService(const WorkerService&) = delete;
  WorkerService& operator=(const WorkerService&) = delete;

  grpc::Status Hello(grpc::ServerContext* ctx, const v1::HelloRequest* req,
                     v1::HelloReply* reply) override;
  grpc::Status Heartbeat(grpc::ServerContext* ctx, const v1::HeartbeatRequest* req,
                         v1::HeartbeatReply* reply) override;
  grpc::Status Drain(grpc::ServerContext* ctx, const v1::DrainRequest* req,
                     v1::DrainReply* reply) override;
  grpc::Status Rollout(
      grpc::ServerContext* ctx,
      grpc::ServerReaderWriter<v1::WorkerMessage, v1::LearnerMessage>* stream) override;

  // Stops accepting episodes; after `timeout` the unfinished ones are returned to the learner.
  void BeginDrain(std::chrono::milliseconds timeout);
  // True once draining and nothing is running or waiting for an ack.
  bool Drained();
  // Ends the active stream and stops the episode threads (in-flight results are dropped).
  void Shutdown();

  std::shared_ptr<const envs::runtime::PolicySnapshot> policy() const;
  std::string RenderMetrics();
  const std::string& worker_id() const { return worker_id_; }

 private:
  struct Episode {
    std::shared_ptr<const v1::EpisodeRequest> request;  // shared with the thread running it
    std::shared_ptr<std::atomic<bool>> cancelled = std::make_shared<std::atomic<bool>>(false);
    bool returned = false;  // handed back during a drain; its result is dropped
    std::chrono::steady_clock::time_point accepted;
  };
  struct Finished {
    // Serialized TrajectoryChunk messages in part order. A chunk inside a message being
    // written is lent to it (its string is empty: a serialized chunk never is) until the writer
    // hands it back, so that sending and resending never copy or re-serialize a trajectory.
    std::vector<std::string> chunks;
    uint64_t order = 0;
    size_t next_chunk = 0;  // parts already written on the active stream
    bool sent = false;      // all parts written on the active stream
    int64_t bytes = 0;      // sum of the chunks' sizes
  };
  struct Lent {
    std::string id;
    uint64_t order;  // tells the entry apart from a later one under the same id
    size_t chunk;
  };

  void RunEpisodes();  // thread body
  v1::Trajectory RunOne(const std::string& id, const Episode& ep,
                        std::chrono::steady_clock::time_point started);
  // All under mu_:
  void HandleEpisodeLocked(v1::EpisodeRequest* req);  // moves from *req when accepted
  void RejectLocked(const std::string& id, v1::RejectReason reason, const std::string& message);
  void CheckDrainDeadlineLocked();
  uint32_t FreeSlotsLocked() const;
  v1::WorkerStatus StatusLocked() const;
  bool HasOutgoingLocked() const;
  void FillMessageLocked(v1::WorkerMessage* msg, std::vector<Lent>* lent);
  void ReturnLentLocked(v1::WorkerMessage* msg, const std::vector<Lent>& lent);
  void WriterLoop(uint64_t session,
                  grpc::ServerReaderWriter<v1::WorkerMessage, v1::LearnerMessage>* stream);

  const WorkerConfig config_;
  const std::string worker_id_;
  EnvCache envs_;
  const EnvRegistry* registry_;
  WorkerMetrics metrics_;

  mutable std::mutex mu_;
  std::condition_variable work_cv_;  // episode threads
  std::condition_variable out_cv_;   // the stream writer
  std::condition_variable idle_cv_;  // drains
  bool stopping_ = false;
  bool draining_ = false;
  std::chrono::steady_clock::time_point drain_deadline_;
  std::unordered_map<std::string, Episode> episodes_;  // accepted, not finished
  std::deque<std::string> queue_;                      // accepted, waiting for a thread
  std::unordered_map<std::string, Finished> outbox_;   // finished, not acknowledged
  int64_t outbox_bytes_ = 0;                           // serialized size of the outbox
  std::deque<std::string> unsent_;                     // outbox ids to send on the active stream
  uint64_t next_order_ = 0;
  std::vector<v1::EpisodeRejected> rejected_;
  std::vector<v1::PolicyApplied> policy_applied_;
  bool status_dirty_ = false;
  uint64_t session_ = 0;  // the active stream's number (0: none)
  uint64_t sessions_opened_ = 0;
  grpc::ServerContext* session_ctx_ = nullptr;
  std::shared_ptr<const envs::runtime::PolicySnapshot> policy_;  // the newest
  // The last kHeldPolicies versions received, by version: an episode whose request names one of
  // them samples it (a learner that pins episodes to a version, grpo.async), any other the
  // newest.
  static constexpr size_t kHeldPolicies = 66;  // grpo.async.max_lag's bound (64) + 2
  std::map<uint64_t, std::shared_ptr<const envs::runtime::PolicySnapshot>> held_;
  std::vector<std::thread> threads_;
};

}  // namespace allot::rollout
