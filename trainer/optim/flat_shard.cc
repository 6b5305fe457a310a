#include "trainer/optim/flat_shard.h"

#include <torch/torch.h>

#include <algorithm>
#include <string>

namespace allot::trainer {

Result<FlatShard> FlatShard::Create(const std::vector<at::Tensor>& params, int rank, int world) {
  if (world < 1 || rank < 0 || rank >= world) {
    return InvalidArgument("zero: rank " + std::to_string(rank) + " of world " +
                           std::to_string(world));
  }
  if (params.empty()) return InvalidArgument("zero: no trainable parameters");
  FlatShard s;
  s.rank_ = rank;
  s.world_ = world;
  s.offsets_.push_back(0);
  for (const at::Tensor& p : params) {
    if (!p.is_contiguous()) return InvalidArgument("zero: a parameter is not contiguous");
    if (p.scalar_type() != params[0].scalar_type() || p.device() != params[0].device()) {
      return InvalidArgument(
          "zero: the trainable parameters mix dtypes or devices; ZeRO shards one flat vector");
    }
    s.offsets_.push_back(s.offsets_.back() + p.numel());
  }
  s.total_ = s.offsets_.back();
  if (s.total_ < world) {
    return InvalidArgument("zero: " + std::to_string(s.total_) + " trainable elements for " +
                           std::to_string(world) + " ranks");
  }
  s.chunk_ = (s.total_ + world - 1) / world;
  return s;
}

std::vector<FlatShard::Piece> FlatShard::PiecesIn(int64_t lo, int64_t hi) const {
  std::vector<Piece> out;
  hi = std::min(hi, total_);
  if (lo >= hi) return out;
  // The first parameter that ends after lo.
  size_t i = std::upper_bound(offsets_.begin(), offsets_.end(), lo) - offsets_.begin() - 1;
  for (; i + 1 < offsets_.size() && offsets_[i] < hi; ++i) {
    const int64_t a = std::max(lo, offsets_[i]);
    const int64_t b = std::min(hi, offsets_[i + 1]);
    if (a < b) out.push_back(Piece{i, a - offsets_[i], a, b - a});
  }
  return out;
}

void FlatShard::Read(const std::vector<at::Tensor>& tensors, int64_t lo,
                     const at::Tensor& dst) const {
  torch::NoGradGuard no_grad;
  const int64_t hi = lo + dst.numel();
  int64_t filled = lo;
  for (const Piece& p : PiecesIn(lo, hi)) {
    at::Tensor out = dst.narrow(0, p.flat_offset - lo, p.length);
    const at::Tensor& t = tensors[p.param];
    if (t.defined()) {
      out.copy_(t.reshape({-1}).narrow(0, p.param_offset, p.length));
    } else {
      out.zero_();
    }
    filled = p.flat_offset + p.length;
  }
  if (filled < hi) dst.narrow(0, filled - lo, hi - filled).zero_();  // padding
}

void FlatShard::Write(const at::Tensor& src, int64_t lo,
                      const std::vector<at::Tensor>& tensors) const {
  torch::NoGradGuard no_grad;
  for (const Piece& p : PiecesIn(lo, lo + src.numel())) {
    at::Tensor t = tensors[p.param].detach();
    t.view({-1})
        .narrow(0, p.param_offset, p.length)
        .copy_(src.narrow(0, p.flat_offset - lo, p.length));
  }
}

}  // namespace allot::trainer
