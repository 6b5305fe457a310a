// Gradient buckets for data-parallel all-reduce, as DDP forms them: consecutive tensors of one
// dtype and device are packed into a flat buffer of about `bucket_bytes`, the buffer is reduced
// in one collective, and the result is copied back. Fewer, larger collectives amortise the
// per-call latency; a bounded bucket keeps the extra memory bounded.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace allot::trainer::comm {

// Indices into the tensor list, in order. A bucket never mixes dtypes or devices; a tensor
// larger than `bucket_bytes` is a bucket of its own. `bucket_bytes` <= 0 puts every run of
// same-typed tensors in one bucket.
using Bucket = std::vector<size_t>;
std::vector<Bucket> PlanBuckets(const std::vector<at::Tensor>& tensors, int64_t bucket_bytes);

// One contiguous 1-D tensor holding the bucket's tensors one after the other.
at::Tensor FlattenBucket(const std::vector<at::Tensor>& tensors, const Bucket& bucket);

// Copies the pieces of `flat` back into the bucket's tensors (in place; shapes are kept).
void UnflattenBucket(const at::Tensor& flat, const std::vector<at::Tensor>& tensors,
                     const Bucket& bucket);

}  // namespace allot::trainer::comm
