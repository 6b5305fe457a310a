#include "trainer/sft/sft_batcher.h"

#include <torch/torch.h>

#include <algorithm>
#include <numeric>
#include <random>

namespace allot::trainer {
namespace {

// Fisher-Yates with an explicit draw, so the order does not depend on the standard library's
// std::shuffle.
template <typename T>
void Shuffle(std::vector<T>& v, std::mt19937_64& rng) {
  for (size_t i = v.size(); i > 1; --i) {
    const size_t j = static_cast<size_t>(rng() % i);
    std::swap(v[i - 1], v[j]);
  }
}

}  // namespace

Result<SftBatcher> SftBatcher::Create(const std::vector<SftExample>* examples, int64_t batch_size,
                                      int64_t grad_accum, int64_t bucket_window, bool shuffle,
                                      uint64_t seed) {
  SftBatcher b;
  b.examples_ = examples;
  b.batch_size_ = batch_size;
  b.grad_accum_ = grad_accum;
  b.bucket_window_ = bucket_window;
  b.shuffle_ = shuffle;
  b.seed_ = seed;
  const int64_t per_step = batch_size * grad_accum;
  b.steps_per_epoch_ = static_cast<int64_t>(examples->size()) / per_step;
  if (b.steps_per_epoch_ == 0) {
    return InvalidArgument("sft: " + std::to_string(examples->size()) +
                           " examples are fewer than one optimizer step needs (sft.batch_size x "
                           "optim.grad_accum = " +
                           std::to_string(per_step) + ")");
  }
  return b;
}

SftCursor SftBatcher::CursorAt(int64_t step) const {
  return {step / steps_per_epoch_, step % steps_per_epoch_};
}

void SftBatcher::BuildEpoch(int64_t epoch) {
  std::vector<size_t> order(examples_->size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::mt19937_64 rng(seed_ * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(epoch) + 1);
  if (shuffle_) Shuffle(order, rng);
  order.resize(static_cast<size_t>(steps_per_epoch_ * batch_size_ * grad_accum_));
  micro_.clear();
  const size_t window = static_cast<size_t>(batch_size_ * bucket_window_);
  for (size_t start = 0; start < order.size(); start += window) {
    const size_t end = std::min(order.size(), start + window);
    if (bucket_window_ > 1) {
      std::stable_sort(order.begin() + start, order.begin() + end, [&](size_t a, size_t b) {
        return (*examples_)[a].ids.size() < (*examples_)[b].ids.size();
      });
    }
    std::vector<std::vector<size_t>> batches;
    for (size_t i = start; i < end; i += batch_size_) {
      batches.emplace_back(order.begin() + i,
                           order.begin() + std::min(end, i + static_cast<size_t>(batch_size_)));
    }
    if (shuffle_ && bucket_window_ > 1) Shuffle(batches, rng);
    for (auto& b : batches) micro_.push_back(std::move(b));
  }
  built_epoch_ = epoch;
}

std::vector<std::vector<size_t>> SftBatcher::StepIndices(int64_t step) {
  const SftCursor c = CursorAt(step);
  if (c.epoch != built_epoch_) BuildEpoch(c.epoch);
  std::vector<std::vector<size_t>> out;
  for (int64_t m = 0; m < grad_accum_; ++m) {
    out.push_back(micro_[static_cast<size_t>(c.step_in_epoch * grad_accum_ + m)]);
  }
  return out;
}

SftMicroBatch SftBatcher::Collate(const std::vector<size_t>& indices) const {
  size_t t = 0;
  for (size_t i : indices) t = std::max(t, (*examples_)[i].ids.size());
  const int64_t b = static_cast<int64_t>(indices.size());
  SftMicroBatch out;
  out.input_ids = torch::zeros({b, static_cast<int64_t>(t)}, torch::kLong);
  out.attention_mask = torch::zeros({b, static_cast<int64_t>(t)}, torch::kLong);
  out.loss_mask = torch::zeros({b, static_cast<int64_t>(t)}, torch::kBool);
  auto ids = out.input_ids.accessor<int64_t, 2>();
  auto mask = out.attention_mask.accessor<int64_t, 2>();
  auto loss = out.loss_mask.accessor<bool, 2>();
  for (int64_t r = 0; r < b; ++r) {
    const SftExample& ex = (*examples_)[indices[static_cast<size_t>(r)]];
    const size_t pad = t - ex.ids.size();
    for (size_t j = 0; j < ex.ids.size(); ++j) {
      ids[r][pad + j] = ex.ids[j];
      mask[r][pad + j] = 1;
      // The first token of a row is never a target: nothing precedes it.
      loss[r][pad + j] = j > 0 && ex.loss[j] != 0;
    }
    out.tokens += static_cast<int64_t>(ex.ids.size());
    out.loss_tokens += ex.loss_tokens();
  }
  return out;
}

}  // namespace allot::trainer
