// ReplayBuffer: a fixed-capacity ring of DQN transitions, with uniform sampling (RLoT) or
// proportional prioritised sampling (Schaul et al., 2016; off by default).
//
// All randomness comes from the caller's generator so that a resumed run samples exactly what
// an uninterrupted one would. Not thread-safe.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"

namespace allot::trainer {

struct Transition {
  std::vector<float> state;
  int action = 0;
  float reward = 0;  // n-step: the discounted sum of n rewards
  std::vector<float> next_state;
  bool done = false;
  float discount = 1;  // gamma^n for the bootstrap term
};

struct SampledBatch {
  std::vector<int64_t> indices;
  std::vector<float> states, next_states;  // [B * state_dim]
  std::vector<int64_t> actions;
  std::vector<float> rewards, dones, discounts;
  std::vector<float> weights;  // importance weights (all 1 when uniform)
};

class ReplayBuffer {
 public:
  ReplayBuffer(int capacity, int state_dim, bool prioritized, double alpha, double eps);

  Status Add(const Transition& t);
  size_t size() const { return size_; }
  int capacity() const { return capacity_; }
  bool full() const { return size_ == static_cast<size_t>(capacity_); }

  SampledBatch Sample(int batch_size, std::mt19937_64& rng, double beta) const;
  // Prioritised replay: new priorities from |TD error|.
  void UpdatePriorities(std::span<const int64_t> indices, std::span<const float> td_errors);

  // Serialised contents for checkpoints (safetensors bytes).
  Result<std::string> Serialize() const;
  Status Deserialize(std::span<const std::byte> bytes, const std::string& source);

 private:
  double PriorityOf(size_t i) const { return priorities_[i]; }

  int capacity_;
  int state_dim_;
  bool prioritized_;
  double alpha_;
  double eps_;
  size_t size_ = 0;
  size_t next_ = 0;
  double max_priority_ = 1.0;
  std::vector<float> states_, next_states_, rewards_, dones_, discounts_;
  std::vector<int64_t> actions_;
  std::vector<double> priorities_;  // p_i^alpha
};

}  // namespace allot::trainer
