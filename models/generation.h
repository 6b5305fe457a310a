// Batched generation with a KV cache: every sample of every request decodes in one left-padded
// batch; finished sequences leave the batch (and the cache) as soon as they stop.
//
// Tokens in, tokens out: a result holds the sampled token ids and their log-probs exactly as
// the learner will see them. Text is decoded only to check stop strings and for the caller's
// convenience.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "models/causal_lm.h"
#include "models/sampling.h"
#include "models/tokenizer/tokenizer.h"

namespace allot::models {

struct GenerationRequest {
  std::vector<int32_t> prompt;  // token ids, non-empty
  SamplingParams params;
};

struct GeneratedSequence {
  // Sampled ids, including a final stop token id / EOS (the policy emitted it and is trained
  // on it). Stop strings end the sequence after the token that completed them.
  std::vector<int32_t> token_ids;
  std::vector<float> logprobs;  // one per token id
  std::string text;             // decoded without the stop token or stop string (tokenizer only)
  std::string finish_reason;    // "stop" | "length"
  std::optional<std::string> stop_string;  // the stop string matched
  std::optional<int32_t> stop_token;       // the stop token id / EOS matched
};

struct GenerationResult {
  std::vector<GeneratedSequence> samples;  // params.n of them
};

class Generator {
 public:
  // `model` and `tokenizer` (nullable; needed for stop strings and text) must outlive this.
  // `eos_token_ids` end every sequence unless a request sets ignore_eos.
  Generator(CausalLMImpl* model, const Tokenizer* tokenizer, std::vector<int32_t> eos_token_ids);

  // EOS ids from the model's config.json.
  Generator(CausalLMImpl* model, const Tokenizer* tokenizer);

  // One result per request, in order. Invalid requests fail the call before any decoding, with
  // the request index in the message.
  Result<std::vector<GenerationResult>> Generate(const std::vector<GenerationRequest>& requests);

 private:
  CausalLMImpl* model_;
  const Tokenizer* tokenizer_;
  std::vector<int32_t> eos_;
};

}  // namespace allot::models
