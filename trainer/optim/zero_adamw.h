// ZeRO stages 1 and 2 (Rajbhandari et al., 2020, "ZeRO: Memory Optimizations Toward Training
// Trillion Parameter Models", Sec. 5.1-5.2) for full-parameter data parallelism over the c10d
// communicator: each of N ranks keeps AdamW's exp_avg and exp_avg_sq for 1/N of the flat
// parameter vector (flat_shard.h), updates that part, and all-gathers the parameters after the
// step, so every rank holds whole parameters again (export and checkpoints of weights work as
// without ZeRO).
//
//   stage 1: gradients are all-reduced whole, as without ZeRO; the optimizer state is sharded.
//   stage 2: gradients are reduce-scattered: each rank keeps only its chunk's summed gradient
//            and drops the whole gradients once reduced. They still exist during backward (the
//            reduction runs after it, not from backward hooks as in DeepSpeed), so backward's
//            peak is stage 1's; what stage 2 saves is held from the reduction to the next
//            backward (the update, the all-gather, a checkpoint's gather).
//
// The update is torch::optim::AdamW's (multi_tensor_adamw.h) over views of this rank's pieces
// of the parameters, element for element the update of the unsharded optimizer; global
// gradient-norm clipping adds the shards' float64 sums of squares over ranks. optimizer() is an
// ordinary AdamW over the pieces: lr_schedule.h sets its lr, and optimizer_state.h saves and
// restores this rank's shard (ZeroStateFileName). A world of one is a shard of everything.
//
//   zero->ZeroGrad();  loss.backward();
//   zero->ReduceGradients();  zero->ClipGradNorm(max);  schedule.Apply(zero->optimizer(), step);
//   zero->Step();
//
// Every call except optimizer() is a collective: all ranks call it in the same order. Not
// thread-safe.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/optim/adamw.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "trainer/optim/adamw.h"
#include "trainer/optim/flat_shard.h"
#include "trainer/optim/optim_config.h"

namespace allot::trainer {

namespace comm {
class Communicator;
}

class ZeroAdamW {
 public:
  // `stage` 1 or 2; `comm` null: a world of one. The parameter groups (weight decay on tensors
  // of rank >= 2) are MakeAdamW's.
  static Result<std::unique_ptr<ZeroAdamW>> Create(const OptimConfig& config,
                                                   const NamedParameters& params,
                                                   comm::Communicator* comm, int stage);
  ~ZeroAdamW();
  ZeroAdamW(const ZeroAdamW&) = delete;
  ZeroAdamW& operator=(const ZeroAdamW&) = delete;

  // AdamW over this rank's pieces (their state is this rank's shard).
  torch::optim::AdamW& optimizer() { return *optimizer_; }
  const torch::optim::AdamW& optimizer() const { return *optimizer_; }
  int stage() const { return stage_; }
  const FlatShard& shard() const { return shard_; }

  // Drops every gradient (the whole ones and this rank's chunk), as zero_grad(set_to_none).
  void ZeroGrad();
  // Sums the gradients over ranks: stage 1 all-reduces the whole gradients; stage 2
  // reduce-scatters them into this rank's chunk and drops the whole ones. A parameter without
  // a gradient counts as zeros.
  Status ReduceGradients();
  // The L2 norm of the whole (summed) gradient, in float64, the same on every rank; with
  // max_norm > 0 and a larger norm, the gradients are scaled by max_norm / (norm + 1e-6), as
  // grad_clip.h. A non-finite norm leaves them untouched.
  Result<double> ClipGradNorm(double max_norm);
  // AdamW on this rank's pieces, then the all-gather that makes every parameter whole.
  Status Step();

  // Bytes of AdamW state (exp_avg, exp_avg_sq) this rank holds.
  int64_t StateBytes() const;
  // Bytes of gradient this rank holds now (stage 2 after ReduceGradients: its chunk).
  int64_t GradientBytes() const;

 private:
  ZeroAdamW() = default;

  std::vector<at::Tensor> params_;  // the whole parameters, in the optimizer's order
  std::vector<at::Tensor> pieces_;  // views of this rank's parts of them
  std::vector<FlatShard::Piece> piece_at_;
  std::unique_ptr<torch::optim::AdamW> optimizer_;
  FlatShard shard_;
  at::Tensor grad_chunk_;  // stage 2: this rank's summed gradient, S elements, until ZeroGrad
  comm::Communicator* comm_ = nullptr;
  int stage_ = 1;
  int64_t bucket_elements_ = 0;  // of one rank's part of a collective
};

// The optimizer-state file of a checkpoint: "optimizer.safetensors" unsharded, and
// "optimizer.rank-<rank>-of-<shards>.safetensors" (5 digits each, rank from 0) for ZeRO's
// shards.
std::string ZeroStateFileName(int rank, int shards);
// Where `rank`'s optimizer state is in checkpoint directory `dir` when this run has `shards`
// shards (0: unsharded). A checkpoint written with another number of shards is refused with a
// message naming both (ZeRO's state resumes only on the world size that wrote it).
Result<std::string> OptimizerStateFile(const std::string& dir, int rank, int shards);

}  // namespace allot::trainer
