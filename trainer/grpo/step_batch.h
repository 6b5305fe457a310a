// The batch of one GRPO step as rank 0 hands it to the other learner ranks.
//
// Rank 0 alone runs the rollouts (dispatcher, workers, the policy endpoint): it collects the
// step's groups, computes the group-relative advantages on whole groups, and broadcasts the
// resulting samples to every rank in one message. Each rank then trains on its shard (every N-th
// sample, ShardIndices) with union-batch denominators (policy_update.h). The same message
// carries a failure of rank 0 (a run that fails on rank 0 fails every rank with its message)
// and the end of the run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "proto/allot/v1/rollout.pb.h"

namespace allot::trainer::grpo {

struct StepBatch {
  enum class Kind : uint8_t { kBatch = 1, kFailed = 2 };
  Kind kind = Kind::kBatch;
  std::string error;  // kFailed: rank 0's message
  int64_t step = 0;   // steps done before this one
  double lr = 0.0;
  std::vector<v1::Trajectory> trajectories;
  std::vector<double> advantages;
  std::vector<std::vector<double>> step_advantages;
};

std::string EncodeStepBatch(const StepBatch& batch);
// DataLoss on a truncated or malformed message.
Result<StepBatch> DecodeStepBatch(const std::string& bytes);

// The samples rank `rank` of `world` trains on: rank, rank + world, ... below n.
std::vector<size_t> ShardIndices(size_t n, int rank, int world);

}  // namespace allot::trainer::grpo
