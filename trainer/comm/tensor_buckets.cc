#include "trainer/comm/tensor_buckets.h"

#include <torch/torch.h>

namespace allot::trainer::comm {

std::vector<Bucket> PlanBuckets(const std::vector<at::Tensor>& tensors, int64_t bucket_bytes) {
  std::vector<Bucket> buckets;
  int64_t bytes = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const at::Tensor& t = tensors[i];
    const int64_t size = t.numel() * static_cast<int64_t>(t.element_size());
    bool start_new = buckets.empty();
    if (!start_new) {
      const at::Tensor& first = tensors[buckets.back().front()];
      start_new = first.scalar_type() != t.scalar_type() || first.device() != t.device() ||
                  (bucket_bytes > 0 && bytes + size > bucket_bytes);
    }
    if (start_new) {
      buckets.emplace_back();
      bytes = 0;
    }
    buckets.back().push_back(i);
    bytes += size;
  }
  return buckets;
}

at::Tensor FlattenBucket(const std::vector<at::Tensor>& tensors, const Bucket& bucket) {
  if (bucket.size() == 1) return tensors[bucket[0]].reshape({-1}).contiguous().clone();
  std::vector<at::Tensor> pieces;
  pieces.reserve(bucket.size());
  for (size_t i : bucket) pieces.push_back(tensors[i].reshape({-1}));
  return torch::cat(pieces);
}

void UnflattenBucket(const at::Tensor& flat, const std::vector<at::Tensor>& tensors,
                     const Bucket& bucket) {
  int64_t offset = 0;
  torch::NoGradGuard no_grad;
  for (size_t i : bucket) {
    at::Tensor t = tensors[i];
    const int64_t n = t.numel();
    t.copy_(flat.narrow(0, offset, n).view(t.sizes()));
    offset += n;
  }
}

}  // namespace allot::trainer::comm
