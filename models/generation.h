// Batched generation with a KV cache: every sample of every request decodes in one left-padded
// batch; finished sequences leave the batch (and the cache) as soon as they stop.
//
// Tokens in, tokens out: a result holds the sampled token ids and their log-probs exactly as
// the learner will see them. Text is decoded only to check stop strings and for the caller's
// convenience.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "models/causal_lm.h"
#include "models/sampling.h"
#include "models/tokenizer/tokenizer.h"

namespace allot::models {

struct GenerationRequest {
  std::vector<int32_t> prompt;  // token ids, non-empty
  SamplingParams params;
  // Called on the generating thread right after each token is sampled, with the sample index
  // (0 .. n-1) and the token; `finished` is true for the sample's last token. For streaming.
  std::function<void(size_t sample, const SampledToken& token, bool finished)> on_token;
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

// Checks a request against the model before any decoding: sampling parameters, a non-empty
// prompt of in-vocabulary ids, prompt + max_tokens within max_position_embeddings, and a
// tokenizer when there are stop strings. `where` prefixes the message.
Status ValidateGenerationRequest(const GenerationRequest& request, const TransformerConfig& config,
                                 const Tokenizer* tokenizer, const std::string& where);

// Step-wise batched decoding for servers (continuous batching): requests join the running batch
// between decode steps and leave it as soon as all their samples finish, so a new request does
// not wait for the longest one in flight. The requests added since the last step are prefilled
// together at the start of the next one (left-padded, in groups of at most kPrefillTokens padded
// tokens), then their KV cache is merged into the batch's, left-padded to the common length:
// one forward pass per group instead of one per request, which on a GPU is what decides how
// fast a burst of requests starts decoding.
//
// Each sample draws from its own seeded stream, so its tokens do not depend on when it joined
// or on its neighbours, up to floating-point differences between batch shapes: a batched
// matmul's rounding depends on how many rows it holds, and left padding moves a row's
// attention sums. With set_batch_invariant(true) nothing depends on the neighbours at all:
// each request is prefilled alone, each sample decodes through a cache of its own with
// one-row kernels, so a seeded sample's tokens and log-probs are bit for bit those it gets
// decoded alone, whatever else is in the batch and whenever it joined (SGLang's
// deterministic inference; RL runs that must be a function of their seed need it). Not
// thread-safe; the model must not be used by anyone else between Add/Step calls.
class DecodeBatch {
 public:
  // `model` and `tokenizer` (nullable) must outlive this. EOS ids from the model's config.json.
  DecodeBatch(CausalLMImpl* model, const Tokenizer* tokenizer);
  ~DecodeBatch();
  DecodeBatch(const DecodeBatch&) = delete;
  DecodeBatch& operator=(const DecodeBatch&) = delete;

  // Padded prompt tokens (rows x longest prompt) prefilled in one forward pass at most; a
  // request longer than this is prefilled alone.
  static constexpr int64_t kPrefillTokens = 16384;

  // Validates `request` (see ValidateGenerationRequest) and adds its n samples; they are
  // prefilled by the next Step(). `id` names the request in Step()'s output.
  Status Add(uint64_t id, GenerationRequest request);

  // Prefills the requests added since the last step, samples the next token of every sequence
  // and runs one decode step for those still going. Returns the requests all of whose samples
  // finished in this step.
  Result<std::vector<std::pair<uint64_t, GenerationResult>>> Step();

  // Drops request `id`'s samples from the batch (e.g. its client went away). NotFound when it
  // is not in the batch.
  Status Cancel(uint64_t id);

  int64_t sequences() const;  // rows in the batch, counting those waiting for their prefill
  int64_t requests() const;   // requests with a sample still running or waiting
  bool empty() const { return sequences() == 0; }

  // Drops every sequence (e.g. after a failed step).
  void Clear();

  // Replays decode steps as CUDA graphs (StaticDecoder): only for a CUDA model in a CUDA build
  // (DecodeGraph::Available()). Off by default.
  void set_cuda_graphs(bool on) { cuda_graphs_ = on; }

  // Batch-invariant decoding (above): one forward pass per sequence and step instead of one
  // per batch; eager (no CUDA graphs). Set before the first Add.
  void set_batch_invariant(bool on) { batch_invariant_ = on; }
  bool batch_invariant() const { return batch_invariant_; }

 private:
  struct State;
  // Prefills the waiting requests, a group at a time, and appends their rows to the batch.
  void PrefillWaiting();
  void Prefill(const std::vector<uint64_t>& ids);
  // Batch-invariant: prefills request `id` alone and gives each of its samples a decoder.
  void PrefillAlone(uint64_t id);
  // Batch-invariant: samples every row from its own logits and steps its own decoder.
  Result<std::vector<std::pair<uint64_t, GenerationResult>>> StepRowsAlone();

  CausalLMImpl* model_;
  const Tokenizer* tokenizer_;
  std::vector<int32_t> eos_;
  std::unique_ptr<State> state_;
  bool cuda_graphs_ = false;
  bool batch_invariant_ = false;
};

}  // namespace allot::models
