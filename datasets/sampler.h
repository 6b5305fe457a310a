// Deterministic shuffling, sharding across learner ranks and rollout workers, and a resumable
// cursor for checkpoints.
//
// The order of epoch e is a Fisher-Yates permutation drawn from SplitMix64 (core/random.h)
// seeded from (seed, e): the same on every machine and standard library. Shard s of
// S = world_size * num_workers takes positions s, s + S, s + 2S, ... of that order, so shards
// never overlap and together cover the epoch (all but the last N mod S examples when
// drop_remainder is set, which keeps every shard the same length and ranks in lockstep).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/config/schema.h"
#include "core/status.h"

namespace allot::datasets {

// Config section `sampler`.
struct SamplerConfig {
  bool shuffle = true;
  int64_t seed = 42;
  bool drop_remainder = true;
  int64_t rank = 0;        // learner rank (RANK)
  int64_t world_size = 1;  // learner ranks (WORLD_SIZE)
  int64_t worker = 0;      // rollout worker within the rank
  int64_t num_workers = 1;

  void Describe(config::Visitor& v) {
    v.Field("shuffle", shuffle, {.doc = "reshuffle every epoch"});
    v.Field("seed", seed, {.doc = "shuffle seed"});
    v.Field("drop_remainder", drop_remainder, {.doc = "equal-length shards"});
    v.Field("rank", rank, {.doc = "this learner rank", .min = 0});
    v.Field("world_size", world_size, {.doc = "number of learner ranks", .min = 1});
    v.Field("worker", worker, {.doc = "this worker within the rank", .min = 0});
    v.Field("num_workers", num_workers, {.doc = "workers per rank", .min = 1});
  }
};

// Where a shard stands: `offset` examples of epoch `epoch` already handed out.
struct DataCursor {
  uint64_t epoch = 0;
  uint64_t offset = 0;
};

class ShardedSampler {
 public:
  // Fails when the shard spec is inconsistent or a shard would be empty.
  static Result<ShardedSampler> Create(size_t dataset_size, const SamplerConfig& config);

  // The dataset index of the next example; rolls over into the next epoch.
  size_t Next();
  // This shard's indices for `epoch`, in order.
  std::vector<size_t> EpochOrder(uint64_t epoch) const;
  size_t shard_size() const { return shard_size_; }
  const DataCursor& cursor() const { return cursor_; }

  // The cursor plus what it is only valid for (dataset size, seed, shard), as JSON for the
  // checkpoint; LoadState refuses a state saved for another dataset or shard.
  nlohmann::json SaveState() const;
  Status LoadState(const nlohmann::json& state);

 private:
  ShardedSampler(size_t n, SamplerConfig config);
  void Refill();

  size_t n_;
  SamplerConfig config_;
  size_t shard_size_ = 0;
  DataCursor cursor_;
  std::vector<size_t> order_;  // EpochOrder(cursor_.epoch), cached
};

}  // namespace allot::datasets
