#include "datasets/sampler.h"

#include "core/random.h"

namespace allot::datasets {

ShardedSampler::ShardedSampler(size_t n, SamplerConfig config) : n_(n), config_(std::move(config)) {
  const size_t shards = static_cast<size_t>(config_.world_size * config_.num_workers);
  const size_t shard = static_cast<size_t>(config_.rank * config_.num_workers + config_.worker);
  shard_size_ = config_.drop_remainder ? n_ / shards : (n_ - shard + shards - 1) / shards;
  Refill();
}

Result<ShardedSampler> ShardedSampler::Create(size_t dataset_size, const SamplerConfig& c) {
  if (c.world_size < 1 || c.num_workers < 1) {
    return InvalidArgument("sampler: world_size and num_workers must be >= 1");
  }
  if (c.rank < 0 || c.rank >= c.world_size) {
    return InvalidArgument("sampler: rank " + std::to_string(c.rank) + " outside world_size " +
                           std::to_string(c.world_size));
  }
  if (c.worker < 0 || c.worker >= c.num_workers) {
    return InvalidArgument("sampler: worker " + std::to_string(c.worker) + " outside num_workers " +
                           std::to_string(c.num_workers));
  }
  const uint64_t shards =
      static_cast<uint64_t>(c.world_size) * static_cast<uint64_t>(c.num_workers);
  const uint64_t shard = static_cast<uint64_t>(c.rank * c.num_workers + c.worker);
  if (dataset_size == 0 || (c.drop_remainder ? dataset_size < shards : dataset_size <= shard)) {
    return InvalidArgument("sampler: a dataset of " + std::to_string(dataset_size) +
                           " examples cannot feed " + std::to_string(shards) + " shards");
  }
  return ShardedSampler(dataset_size, c);
}

std::vector<size_t> ShardedSampler::EpochOrder(uint64_t epoch) const {
  std::vector<size_t> global(n_);
  for (size_t i = 0; i < n_; ++i) global[i] = i;
  if (config_.shuffle) {
    SplitMix64 rng(static_cast<uint64_t>(config_.seed) * kSplitMix64Gamma ^
                   (epoch + 1) * 0xD1B54A32D192ED03ull);
    rng.Shuffle(global);
  }
  const size_t shards = static_cast<size_t>(config_.world_size * config_.num_workers);
  const size_t shard = static_cast<size_t>(config_.rank * config_.num_workers + config_.worker);
  std::vector<size_t> mine;
  mine.reserve(shard_size_);
  for (size_t p = shard; p < n_ && mine.size() < shard_size_; p += shards)
    mine.push_back(global[p]);
  return mine;
}

void ShardedSampler::Refill() { order_ = EpochOrder(cursor_.epoch); }

size_t ShardedSampler::Next() {
  if (cursor_.offset >= shard_size_) {
    ++cursor_.epoch;
    cursor_.offset = 0;
    Refill();
  }
  return order_[cursor_.offset++];
}

nlohmann::json ShardedSampler::SaveState() const {
  return {{"epoch", cursor_.epoch},
          {"offset", cursor_.offset},
          {"dataset_size", n_},
          {"seed", config_.seed},
          {"shuffle", config_.shuffle},
          {"rank", config_.rank},
          {"world_size", config_.world_size},
          {"worker", config_.worker},
          {"num_workers", config_.num_workers}};
}

Status ShardedSampler::LoadState(const nlohmann::json& s) {
  if (!s.is_object()) return InvalidArgument("sampler state: expected an object");
  auto expect = [&](const char* key, const nlohmann::json& want) -> Status {
    if (!s.contains(key))
      return InvalidArgument(std::string("sampler state: missing '") + key + "'");
    if (s[key] != want) {
      return InvalidArgument(std::string("sampler state: '") + key + "' was " + s[key].dump() +
                             " when saved, now " + want.dump() + "; refusing to resume");
    }
    return Status::Ok();
  };
  ALLOT_RETURN_IF_ERROR(expect("dataset_size", n_));
  ALLOT_RETURN_IF_ERROR(expect("seed", config_.seed));
  ALLOT_RETURN_IF_ERROR(expect("shuffle", config_.shuffle));
  ALLOT_RETURN_IF_ERROR(expect("rank", config_.rank));
  ALLOT_RETURN_IF_ERROR(expect("world_size", config_.world_size));
  ALLOT_RETURN_IF_ERROR(expect("worker", config_.worker));
  ALLOT_RETURN_IF_ERROR(expect("num_workers", config_.num_workers));
  if (!s.contains("epoch") || !s["epoch"].is_number_unsigned() || !s.contains("offset") ||
      !s["offset"].is_number_unsigned()) {
    return InvalidArgument("sampler state: 'epoch' and 'offset' must be non-negative integers");
  }
  const uint64_t offset = s["offset"].get<uint64_t>();
  if (offset > shard_size_) {
    return InvalidArgument("sampler state: offset " + std::to_string(offset) +
                           " beyond the shard size " + std::to_string(shard_size_));
  }
  cursor_.epoch = s["epoch"].get<uint64_t>();
  cursor_.offset = offset;
  Refill();
  return Status::Ok();
}

}  // namespace allot::datasets
