// The order in which SFT examples are seen, and their collation into padded micro-batches.
//
// Each epoch's order is a pure function of (seed, epoch): a seeded shuffle, then length
// bucketing (each window of batch_size x bucket_window examples is sorted by length and cut
// into micro-batches, whose order within the window is shuffled again), so padding stays small
// without packing. Every optimizer step takes grad_accum micro-batches; the examples left over
// at an epoch's end are skipped. The data cursor is therefore the step number itself, and a
// resumed run sees exactly the batches an uninterrupted run would.
//
// With sft.packing (trainer/sft/packing.h) each micro-batch then runs as one padding-free
// packed stream, so the padding that bucketing leaves costs nothing either.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "trainer/sft/sft_dataset.h"

namespace allot::trainer {

struct SftMicroBatch {
  at::Tensor input_ids;       // int64 [b, T], left-padded with 0
  at::Tensor attention_mask;  // int64 [b, T], 1 = real token
  at::Tensor loss_mask;       // bool [b, T], true = a target token
  int64_t tokens = 0;         // real tokens
  int64_t loss_tokens = 0;    // target tokens
};

struct SftCursor {
  int64_t epoch = 0;
  int64_t step_in_epoch = 0;
};

class SftBatcher {
 public:
  // `examples` must outlive the batcher.
  static Result<SftBatcher> Create(const std::vector<SftExample>* examples, int64_t batch_size,
                                   int64_t grad_accum, int64_t bucket_window, bool shuffle,
                                   uint64_t seed);

  int64_t steps_per_epoch() const { return steps_per_epoch_; }
  SftCursor CursorAt(int64_t step) const;

  // The example indices of optimizer step `step`, as grad_accum micro-batches.
  std::vector<std::vector<size_t>> StepIndices(int64_t step);

  SftMicroBatch Collate(const std::vector<size_t>& indices) const;

 private:
  SftBatcher() = default;
  void BuildEpoch(int64_t epoch);

  const std::vector<SftExample>* examples_ = nullptr;
  int64_t batch_size_ = 1;
  int64_t grad_accum_ = 1;
  int64_t bucket_window_ = 1;
  bool shuffle_ = true;
  uint64_t seed_ = 0;
  int64_t steps_per_epoch_ = 0;
  int64_t built_epoch_ = -1;
  std::vector<std::vector<size_t>> micro_;  // the built epoch's micro-batches in order
};

}  // namespace allot::trainer
