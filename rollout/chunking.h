// Splitting trajectories and policy updates into chunks below the gRPC message limit, and
// putting them back together with every size and order checked.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "envs/runtime/env.h"
#include "proto/allot/v1/rollout.pb.h"

namespace allot::rollout {

// One chunk holding the whole trajectory when it serializes to at most chunk_bytes, else parts.
std::vector<v1::TrajectoryChunk> ChunkTrajectory(v1::Trajectory trajectory, uint32_t attempt,
                                                 size_t chunk_bytes);

// ChunkTrajectory, each chunk serialized: what a worker keeps until the learner's ack.
std::vector<std::string> SerializeTrajectoryChunks(v1::Trajectory trajectory, uint32_t attempt,
                                                   size_t chunk_bytes);

// Appends a serialized TrajectoryChunk to `msg` without parsing or copying it: the bytes are
// swapped into an unknown length-delimited field 1, which on the wire is exactly an element of
// WorkerMessage.chunks (field 1, length-delimited), so every receiver parses it as one. `bytes`
// is left empty; TakeBackSerializedChunks hands the bytes back once the message was written.
void AppendSerializedChunk(v1::WorkerMessage* msg, std::string* bytes);
// Moves the serialized chunks out of `msg`, in AppendSerializedChunk order.
std::vector<std::string> TakeBackSerializedChunks(v1::WorkerMessage* msg);

// Reassembles parted trajectories, per stream. Not thread-safe.
class TrajectoryAssembler {
 public:
  TrajectoryAssembler(int64_t max_trajectory_bytes, size_t max_open)
      : max_bytes_(max_trajectory_bytes), max_open_(max_open) {}

  // Returns the trajectory when `chunk` completes one, nullopt while parts are missing, or an
  // error for a malformed chunk (the partial episode is dropped). A whole trajectory is moved
  // out of `chunk`.
  Result<std::optional<v1::Trajectory>> Add(v1::TrajectoryChunk& chunk);
  size_t open() const { return open_.size(); }

 private:
  struct Partial {
    uint32_t count = 0;
    uint32_t next = 0;
    uint64_t total = 0;
    std::string bytes;
  };
  int64_t max_bytes_;
  size_t max_open_;
  std::map<std::string, Partial> open_;
};


// The chunks of one policy update (a LoRA update is one chunk with no data).
std::vector<v1::PolicyChunk> ChunkPolicy(const envs::runtime::PolicySnapshot& policy,
                                         size_t chunk_bytes);

// Collects the chunks of policy updates, per stream. Not thread-safe.
class PolicyAssembler {
 public:
  PolicyAssembler(int64_t max_policy_bytes, int64_t chunk_limit)
      : max_bytes_(max_policy_bytes), chunk_limit_(chunk_limit) {}

  // Returns the snapshot when `chunk` completes a verified update, null while incomplete, or
  // an error (bad field, out-of-order chunk, checksum mismatch) that discards the update.
  Result<std::shared_ptr<const envs::runtime::PolicySnapshot>> Add(const v1::PolicyChunk& chunk);

 private:
  int64_t max_bytes_;
  int64_t chunk_limit_;
  uint64_t version_ = 0;  // update being assembled (0: none)
  uint32_t next_ = 0;
  v1::PolicyChunk head_;
  std::string bytes_;
};

}  // namespace allot::rollout
