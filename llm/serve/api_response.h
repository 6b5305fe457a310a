// Response bodies of /v1/completions and /v1/chat/completions (OpenAI shapes plus vLLM's
// token_ids / prompt_token_ids / stop_reason), and the incremental detokenizer behind SSE.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llm/serve/engine.h"
#include "models/generation.h"
#include "models/tokenizer/tokenizer.h"

namespace allot::llm::serve {

// JSON text; invalid UTF-8 (a token cut inside a character) becomes U+FFFD.
std::string Dump(const nlohmann::json& j);

// A logprob entry's token: its text, or "token_id:N" (vLLM's return_tokens_as_token_ids).
std::string TokenString(const models::Tokenizer& tokenizer, int32_t id, bool as_ids);

// {"tokens", "token_logprobs", "top_logprobs", "text_offset"} for tokens [from, to) of a sample.
// `top` holds one list per token of the whole sample, or is null.
nlohmann::json CompletionLogprobs(const models::Tokenizer& tokenizer,
                                  const models::GeneratedSequence& seq, size_t from, size_t to,
                                  const std::vector<std::vector<TopToken>>* top, bool as_ids,
                                  size_t text_offset);

// {"content": [{"token", "logprob", "bytes", "top_logprobs"}]} for tokens [from, to).
nlohmann::json ChatLogprobs(const models::Tokenizer& tokenizer,
                            const models::GeneratedSequence& seq, size_t from, size_t to,
                            const std::vector<std::vector<TopToken>>* top, bool as_ids);

// vLLM's prompt_logprobs: [null, {"<id>": {"logprob", "rank", "decoded_token"}, ...}, ...], one
// entry per prompt token, the first null; each holds the prompt token and its alternatives.
nlohmann::json PromptLogprobsJson(const models::Tokenizer& tokenizer,
                                  const std::vector<PromptTokenLogprob>& entries, bool as_ids);

// vLLM's stop_reason: the stop string, the stop token id from stop_token_ids, or null (EOS or
// length).
nlohmann::json StopReason(const models::GeneratedSequence& seq,
                          const models::SamplingParams& params);

// Streams a sample's text as its tokens arrive. Text that could still become part of a stop
// string (the last longest-stop-minus-one bytes) or an incomplete UTF-8 character is held
// back, so the streamed deltas always add up to the final text.
class StreamDetokenizer {
 public:
  StreamDetokenizer(const models::Tokenizer* tokenizer, size_t hold_back)
      : tokenizer_(tokenizer), hold_back_(hold_back) {}

  // The new text that may be sent after token `id`.
  std::string Push(int32_t id);
  // The rest of `final_text` (the generator's decoded result) not sent yet.
  std::string Finish(const std::string& final_text);

 private:
  const models::Tokenizer* tokenizer_;
  size_t hold_back_;
  std::vector<int32_t> ids_;
  size_t emitted_ = 0;
};

}  // namespace allot::llm::serve
