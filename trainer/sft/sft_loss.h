// Completion-only SFT loss: -sum over target tokens of log p(token | prefix). Only the target
// rows of the hidden states reach the output layer, and those in chunks
// (CausalLM::SelectedLogProbs), so neither [B, T, V] nor even [target tokens, V] exists at once.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "models/causal_lm.h"
#include "trainer/sft/sft_batcher.h"

namespace allot::trainer {

// Scalar float32, differentiable: the sum (not the mean) of the target tokens' negative
// log-likelihoods, to be scaled by TokenAccumulator.
at::Tensor CompletionLossSum(models::CausalLMImpl& model, const SftMicroBatch& batch,
                             int64_t chunk_tokens);

}  // namespace allot::trainer
