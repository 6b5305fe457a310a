#include "trainer/dqn/replay_buffer.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "core/safetensors.h"

namespace allot::trainer {

ReplayBuffer::ReplayBuffer(int capacity, int state_dim, bool prioritized, double alpha, double eps)
    : capacity_(capacity),
      state_dim_(state_dim),
      prioritized_(prioritized),
      alpha_(alpha),
      eps_(eps),
      states_(static_cast<size_t>(capacity) * state_dim),
      next_states_(static_cast<size_t>(capacity) * state_dim),
      rewards_(capacity),
      dones_(capacity),
      discounts_(capacity),
      actions_(capacity),
      priorities_(capacity, 0.0) {}

Status ReplayBuffer::Add(const Transition& t) {
  if (t.state.size() != static_cast<size_t>(state_dim_) ||
      t.next_state.size() != static_cast<size_t>(state_dim_)) {
    return InvalidArgument("transition: state has " + std::to_string(t.state.size()) +
                           " features, the navigator expects " + std::to_string(state_dim_));
  }
  for (float f : t.state) {
    if (!std::isfinite(f)) return InvalidArgument("transition: non-finite state feature");
  }
  if (!std::isfinite(t.reward)) return InvalidArgument("transition: non-finite reward");
  const size_t i = next_;
  std::copy(t.state.begin(), t.state.end(), states_.begin() + i * state_dim_);
  std::copy(t.next_state.begin(), t.next_state.end(), next_states_.begin() + i * state_dim_);
  actions_[i] = t.action;
  rewards_[i] = t.reward;
  dones_[i] = t.done ? 1.0f : 0.0f;
  discounts_[i] = t.discount;
  // New transitions get the highest priority seen, so each is replayed at least once soon.
  priorities_[i] = max_priority_;
  next_ = (next_ + 1) % capacity_;
  size_ = std::min(size_ + 1, static_cast<size_t>(capacity_));
  return Status::Ok();
}

SampledBatch ReplayBuffer::Sample(int batch_size, std::mt19937_64& rng, double beta) const {
  SampledBatch b;
  b.indices.resize(batch_size);
  if (!prioritized_) {
    std::uniform_int_distribution<int64_t> pick(0, static_cast<int64_t>(size_) - 1);
    for (auto& idx : b.indices) idx = pick(rng);
    b.weights.assign(batch_size, 1.0f);
  } else {
    std::vector<double> cumulative(size_);
    double total = 0;
    for (size_t i = 0; i < size_; ++i) cumulative[i] = (total += PriorityOf(i));
    std::uniform_real_distribution<double> u(0.0, total);
    double max_w = 0;
    std::vector<double> w(batch_size);
    for (int k = 0; k < batch_size; ++k) {
      const double target = u(rng);
      size_t i =
          std::lower_bound(cumulative.begin(), cumulative.end(), target) - cumulative.begin();
      i = std::min(i, size_ - 1);
      b.indices[k] = static_cast<int64_t>(i);
      const double p = PriorityOf(i) / total;
      w[k] = std::pow(static_cast<double>(size_) * p, -beta);
      max_w = std::max(max_w, w[k]);
    }
    b.weights.resize(batch_size);
    for (int k = 0; k < batch_size; ++k) b.weights[k] = static_cast<float>(w[k] / max_w);
  }
  b.states.resize(static_cast<size_t>(batch_size) * state_dim_);
  b.next_states.resize(b.states.size());
  b.actions.resize(batch_size);
  b.rewards.resize(batch_size);
  b.dones.resize(batch_size);
  b.discounts.resize(batch_size);
  for (int k = 0; k < batch_size; ++k) {
    const size_t i = static_cast<size_t>(b.indices[k]);
    std::copy_n(states_.begin() + i * state_dim_, state_dim_, b.states.begin() + k * state_dim_);
    std::copy_n(next_states_.begin() + i * state_dim_, state_dim_,
                b.next_states.begin() + k * state_dim_);
    b.actions[k] = actions_[i];
    b.rewards[k] = rewards_[i];
    b.dones[k] = dones_[i];
    b.discounts[k] = discounts_[i];
  }
  return b;
}

void ReplayBuffer::UpdatePriorities(std::span<const int64_t> indices,
                                    std::span<const float> td_errors) {
  if (!prioritized_) return;
  for (size_t k = 0; k < indices.size(); ++k) {
    const double p = std::pow(std::abs(static_cast<double>(td_errors[k])) + eps_, alpha_);
    priorities_[static_cast<size_t>(indices[k])] = p;
    max_priority_ = std::max(max_priority_, p);
  }
}

namespace {
template <typename T>
std::span<const std::byte> AsBytes(const std::vector<T>& v, size_t count) {
  return {reinterpret_cast<const std::byte*>(v.data()), count * sizeof(T)};
}
}  // namespace

Result<std::string> ReplayBuffer::Serialize() const {
  using safetensors::Dtype;
  const int64_t n = static_cast<int64_t>(capacity_), s = state_dim_;
  return safetensors::Serialize(
      {{"states", Dtype::kF32, {n, s}, AsBytes(states_, states_.size())},
       {"next_states", Dtype::kF32, {n, s}, AsBytes(next_states_, next_states_.size())},
       {"actions", Dtype::kI64, {n}, AsBytes(actions_, actions_.size())},
       {"rewards", Dtype::kF32, {n}, AsBytes(rewards_, rewards_.size())},
       {"dones", Dtype::kF32, {n}, AsBytes(dones_, dones_.size())},
       {"discounts", Dtype::kF32, {n}, AsBytes(discounts_, discounts_.size())},
       {"priorities", Dtype::kF64, {n}, AsBytes(priorities_, priorities_.size())}},
      {{"size", std::to_string(size_)},
       {"next", std::to_string(next_)},
       {"max_priority_bits", std::to_string(std::bit_cast<uint64_t>(max_priority_))}});
}

Status ReplayBuffer::Deserialize(std::span<const std::byte> bytes, const std::string& source) {
  ALLOT_ASSIGN_OR_RETURN(safetensors::View view, safetensors::View::Parse(bytes, source));
  auto copy = [&](const char* name, auto& vec) -> Status {
    const safetensors::TensorInfo* t = view.Find(name);
    using Elem = typename std::decay_t<decltype(vec)>::value_type;
    if (t == nullptr || t->nbytes() != vec.size() * sizeof(Elem)) {
      return DataLoss(source + ": replay tensor '" + std::string(name) +
                      "' is missing or does not match capacity " + std::to_string(capacity_));
    }
    auto d = view.Data(*t);
    std::memcpy(vec.data(), d.data(), d.size());
    return Status::Ok();
  };
  ALLOT_RETURN_IF_ERROR(copy("states", states_));
  ALLOT_RETURN_IF_ERROR(copy("next_states", next_states_));
  ALLOT_RETURN_IF_ERROR(copy("actions", actions_));
  ALLOT_RETURN_IF_ERROR(copy("rewards", rewards_));
  ALLOT_RETURN_IF_ERROR(copy("dones", dones_));
  ALLOT_RETURN_IF_ERROR(copy("discounts", discounts_));
  ALLOT_RETURN_IF_ERROR(copy("priorities", priorities_));
  try {
    size_ = std::stoull(view.metadata().at("size"));
    next_ = std::stoull(view.metadata().at("next"));
    max_priority_ = std::bit_cast<double>(
        static_cast<uint64_t>(std::stoull(view.metadata().at("max_priority_bits"))));
  } catch (const std::exception&) {
    return DataLoss(source + ": replay metadata (size, next, max_priority_bits) is malformed");
  }
  if (size_ > static_cast<size_t>(capacity_) || next_ >= static_cast<size_t>(capacity_)) {
    return DataLoss(source + ": replay size/next out of range");
  }
  for (int64_t a : actions_) {
    if (a < 0) return DataLoss(source + ": negative action in replay");
  }
  return Status::Ok();
}

}  // namespace allot::trainer
