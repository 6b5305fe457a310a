// Token-weighted gradient accumulation. An optimizer step over k micro-batches must equal one
// step over their concatenation, whose loss is the mean over all its loss tokens. Averaging
// per-micro-batch means would weight a short micro-batch's tokens more, so each micro-batch
// contributes sum(token losses) / N, with N the loss tokens of the whole step (all micro-batches,
// and all data-parallel ranks once they are summed across them).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace allot::trainer {

class TokenAccumulator {
 public:
  // `step_tokens`: loss tokens of the whole optimizer step (>= 1; 0 is treated as 1 so that an
  // all-masked step yields zero gradients rather than NaN).
  explicit TokenAccumulator(int64_t step_tokens);

  // The micro-batch loss to backpropagate: token_loss_sum / step_tokens. `token_loss_sum` is a
  // scalar (e.g. -(logp * mask).sum()). Records its value for reporting.
  at::Tensor Scale(const at::Tensor& token_loss_sum);

  // The step's mean loss per token over the micro-batches scaled so far.
  double mean_loss() const { return loss_sum_ / static_cast<double>(step_tokens_); }
  int64_t step_tokens() const { return step_tokens_; }

 private:
  int64_t step_tokens_;
  double loss_sum_ = 0.0;
};

}  // namespace allot::trainer
