// The trainable parameters seen as one flat vector, cut into one equal chunk per rank: the
// partition of ZeRO (Rajbhandari et al., 2020, Sec. 5), which zero_adamw.h shards AdamW's state
// and the gradients by.
//
//   flat = p0.view(-1) ++ p1.view(-1) ++ ...      T elements, in the optimizer's order
//   S = ceil(T / N)                                 the chunk; N x S - T elements of padding
//   rank r owns [r S, min((r + 1) S, T))
//
// A parameter may straddle two chunks: each rank sees its part of it as a piece (a view).
#pragma once

#include <ATen/core/Tensor.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/status.h"

namespace allot::trainer {

class FlatShard {
 public:
  // Part of one parameter inside a range of the flat vector.
  struct Piece {
    size_t param = 0;          // index into the parameter list
    int64_t param_offset = 0;  // in the parameter's elements
    int64_t flat_offset = 0;   // in the flat vector
    int64_t length = 0;
  };

  // The parameters must be contiguous and of one dtype and device; `world` >= 1 and no larger
  // than their element count (every rank owns at least one element).
  static Result<FlatShard> Create(const std::vector<at::Tensor>& params, int rank, int world);

  int rank() const { return rank_; }
  int world() const { return world_; }
  int64_t total() const { return total_; }
  int64_t chunk() const { return chunk_; }
  // This rank's range of the flat vector, padding excluded.
  int64_t begin() const { return rank_ * chunk_; }
  int64_t end() const { return std::min(total_, (rank_ + 1) * chunk_); }

  // The parameters' parts inside [lo, hi), in order.
  std::vector<Piece> PiecesIn(int64_t lo, int64_t hi) const;

  // Copies the flat range [lo, lo + dst.numel()) of `tensors` (the parameters, or their
  // gradients; an undefined tensor reads as zeros, the padding too) into the 1-D `dst`.
  void Read(const std::vector<at::Tensor>& tensors, int64_t lo, const at::Tensor& dst) const;
  // Copies the 1-D `src` into the flat range [lo, lo + src.numel()) of `tensors` (the padding
  // is dropped).
  void Write(const at::Tensor& src, int64_t lo, const std::vector<at::Tensor>& tensors) const;

 private:
  std::vector<int64_t> offsets_;  // flat offset of each parameter, and T at the end
  int rank_ = 0;
  int world_ = 1;
  int64_t total_ = 0;
  int64_t chunk_ = 0;
};

}  // namespace allot::trainer
