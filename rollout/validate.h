// Field-by-field validation of allot.v1 messages. Every message from the network passes through
// one of these before it is used; the error names the field and the limit.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "proto/allot/v1/rollout.pb.h"

namespace allot::rollout {

// Protocol-wide bounds (documented in rollout.proto).
inline constexpr size_t kMaxIdBytes = 128;
inline constexpr size_t kMaxEnvNameBytes = 64;
inline constexpr size_t kMaxEnvConfigBytes = 64 << 10;
inline constexpr size_t kMaxDatasetItemBytes = 1 << 20;
inline constexpr uint32_t kMaxGroupSize = 4096;
inline constexpr uint32_t kMaxTimeoutMs = 24u * 3600u * 1000u;
inline constexpr uint32_t kMaxAttempt = 1000;
inline constexpr int kMaxEpisodesPerMessage = 4096;
inline constexpr int kMaxAcksPerMessage = 65536;
inline constexpr uint32_t kMaxChunks = 65536;
inline constexpr size_t kMaxInfoEntries = 64;
inline constexpr size_t kMaxInfoBytes = 4 << 10;
inline constexpr size_t kMaxFailureMessageBytes = 4 << 10;
inline constexpr int kMaxEndpoints = 256;

// [A-Za-z0-9._:-]{1,128}
Status ValidateEpisodeId(const std::string& id, const char* field = "episode_id");
Status ValidateEpisodeRequest(const v1::EpisodeRequest& r);
Status ValidateLearnerMessage(const v1::LearnerMessage& m);
// chunk_limit: the largest data slice accepted in one chunk.
Status ValidatePolicyChunk(const v1::PolicyChunk& c, int64_t max_policy_bytes, int64_t chunk_limit);
// Structural checks of a trajectory coming back from a worker (or an env).
Status ValidateTrajectory(const v1::Trajectory& t);
Status ValidateTrajectoryChunk(const v1::TrajectoryChunk& c, int64_t max_trajectory_bytes);

// Keeps at most n bytes of untrusted text for echoing in errors.
std::string Truncated(const std::string& s, size_t n = kMaxIdBytes);

}  // namespace allot::rollout
