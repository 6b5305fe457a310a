// Sampling parameters and the per-sequence sampler: temperature, top-k, top-p (nucleus,
// Holtzman et al., 2020), seeded.
//
// Each sequence owns its random stream, seeded from (seed, sample index), and draws on the CPU,
// so a sequence's tokens do not depend on what else is in the batch or on the device.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/status.h"

namespace allot::models {

// Field names and meanings follow the OpenAI / vLLM sampling parameters.
struct SamplingParams {
  double temperature = 1.0;  // 0 = greedy
  double top_p = 1.0;        // (0, 1]
  int64_t top_k = 0;         // 0 or -1 = off
  int64_t max_tokens = 16;
  int64_t n = 1;
  std::optional<uint64_t> seed;   // unset = nondeterministic
  std::vector<std::string> stop;  // stop strings (need a tokenizer)
  std::vector<int32_t> stop_token_ids;
  bool ignore_eos = false;
  bool include_stop_str_in_output = false;

  // Messages name the field ("top_p must be in (0, 1], got 0").
  Status Validate() const;
};

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

 private:
  SamplingParams params_;
  std::mt19937_64 rng_;
};

}  // namespace allot::models
