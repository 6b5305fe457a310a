// SFT with packing: a micro-batch's examples as one padding-free stream (models/
// packed_sequences.h). Each example attends only to itself (a block-diagonal causal mask) with
// positions restarting at 0, so the loss equals the padded batch's; the projections and MLPs
// run on real tokens only. Completion-only loss holds: only target tokens reach the output
// layer, in chunks.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "models/causal_lm.h"
#include "trainer/sft/sft_batcher.h"

namespace allot::trainer {

// CompletionLossSum (sft_loss.h) of `batch` computed packed: the same scalar, differentiable.
// (A loss token that is its example's very first token has no prefix and is not scored here;
// the padded path would score it from padding.)
at::Tensor PackedCompletionLossSum(models::CausalLMImpl& model, const SftMicroBatch& batch,
                                   int64_t chunk_tokens);

}  // namespace allot::trainer
