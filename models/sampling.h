// The per-sequence sampler: temperature, top-k, top-p (nucleus, Holtzman et al., 2020),
// seeded. Its parameters are models/sampling_params.h (no LibTorch there).
//
// Each sequence owns its random stream, seeded from (seed, sample index), and draws on the CPU,
// so a sequence's tokens do not depend on what else is in the batch or on the device.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <random>
#include <vector>

#include "models/sampling_params.h"

namespace allot::models {

struct SampledToken {
  int32_t token = 0;
  // log p(token) under softmax(logits / temperature) before top-k/top-p truncation (under the
  // raw logits when greedy): the quantity the learner recomputes with CausalLM::TokenLogProbs.
  float logprob = 0.0f;
};

class Sampler {
 public:
  // `stream` separates the n samples of one request (sample index).
  Sampler(const SamplingParams& params, uint64_t stream);

  // `logits`: float32 [vocab] for one sequence (any device).
  SampledToken Sample(const at::Tensor& logits);

  bool greedy() const { return params_.temperature == 0.0; }

 private:
  SamplingParams params_;
  std::mt19937_64 rng_;
};

// One token per row of `logits` [rows, vocab] (any device), row r drawn by `samplers[r]`: the
// same tokens and log-probs as samplers[r]->Sample(logits[r]). Greedy rows are decided together
// on the logits' device and only their ids and log-probs are copied back; the other rows are
// copied to the CPU in one transfer. On a GPU this replaces one vocabulary-sized copy (and its
// synchronisation) per sequence and decode step with two per step.
std::vector<SampledToken> SampleRows(const std::vector<Sampler*>& samplers,
                                     const at::Tensor& logits);

}  // namespace allot::models
