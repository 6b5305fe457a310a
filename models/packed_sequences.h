// Packed sequences: the real tokens of a padded batch as one stream, sequence after sequence.
//
// A batch of variable-length sequences padded to its longest spends compute on the padding:
// every projection and MLP runs on B x T slots. Packed, the projections and the MLP run on the
// N real tokens only, and attention runs per sequence (segment) with a causal mask inside it,
// so no token sees another sequence: a block-diagonal causal mask, at the cost of the blocks
// alone. Position ids restart at 0 for every segment, so each sequence gets exactly the hidden
// states it would get alone (CausalLM::HiddenPacked).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace allot::models {

struct PackedBatch {
  at::Tensor input_ids;          // int64 [N]: the sequences' real tokens, one after another
  std::vector<int64_t> lengths;  // tokens per segment, in stream order (sum = N)
  // For every real token that has a successor in its sequence: its index in the stream
  // (`from`), the successor's id (`target`), and the flat index in [B, T-1] of the column that
  // scores that successor in the padded layout (`column`), all int64 [M].
  at::Tensor from;
  at::Tensor target;
  at::Tensor column;
};

// Packs the tokens with attention_mask = 1 of `input_ids` [B, T] (result on the CPU). Real
// tokens keep their order; padding may sit anywhere; a row without real tokens is skipped.
PackedBatch PackPaddedBatch(const at::Tensor& input_ids, const at::Tensor& attention_mask);

// Position ids int64 [N] restarting at 0 for each segment of `lengths`.
at::Tensor SegmentPositions(const std::vector<int64_t>& lengths);

}  // namespace allot::models
