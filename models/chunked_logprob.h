// The learner's log-prob kernel: log p(target) for each row of hidden states under the output
// projection, without the [rows, vocab] logits in memory at once (they are formed chunk by
// chunk in forward and recomputed chunk by chunk in backward: O(chunk x vocab)). float32
// weights keep float32 logits; bfloat16/half weights at temperature 1 take a fused path (the
// comment in chunked_logprob.cc). Differentiable in `hidden` and `weight`.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace allot::models {

// hidden [rows, d], weight [vocab, d], targets [rows] (any integer type) -> [rows] float32
// log-probs of the targets at `temperature`.
at::Tensor ChunkedSelectedLogProbs(const at::Tensor& hidden, const at::Tensor& weight,
                                   const at::Tensor& targets, int64_t chunk_tokens,
                                   double temperature);

}  // namespace allot::models
