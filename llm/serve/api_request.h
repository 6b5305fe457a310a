// Parsing the bodies of /v1/completions and /v1/chat/completions into typed requests.
//
// Field names follow OpenAI and vLLM (`return_token_ids`, `stop_token_ids`, `top_k`, ...).
// Wrong types and out-of-range values are 400 errors naming the field; unknown fields are
// ignored, as OpenAI clients send fields a local server has no use for.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "llm/serve/api_error.h"
#include "models/sampling_params.h"
#include "models/tokenizer/chat_template.h"

namespace allot::llm::serve {

// A completion prompt: text, or token ids.
struct Prompt {
  bool is_ids = false;
  std::string text;
  std::vector<int32_t> ids;
};

struct GenerateRequest {
  bool chat = false;
  std::string model;
  std::vector<Prompt> prompts;                // completions: one or more
  std::vector<models::ChatMessage> messages;  // chat
  bool add_generation_prompt = true;          // chat (vLLM)
  models::SamplingParams params;
  bool max_tokens_set = false;  // chat without max_tokens runs to the end of the context
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  bool echo = false;           // completions: prepend the prompt text
  // Completions: `logprobs: k` (k alternatives). Chat: `logprobs: true` with `top_logprobs: k`.
  // -1 = no logprobs.
  int logprobs = -1;
  // Completions (vLLM): the log-prob of every prompt token after the first under the model (or
  // adapter) that serves the request, plus the k most likely alternatives. -1 = not asked.
  int prompt_logprobs = -1;
  bool return_token_ids = false;            // vLLM: prompt_token_ids and choice token_ids
  bool return_tokens_as_token_ids = false;  // vLLM: logprob tokens as "token_id:N"
};

// Largest `logprobs` / `top_logprobs` (vLLM's default max_logprobs).
inline constexpr int kMaxLogprobs = 20;

// `body` must be a JSON object. `default_max_tokens` applies when max_tokens is absent.
// Returns false and fills *error on a bad request.
bool ParseGenerateRequest(const nlohmann::json& body, bool chat, int64_t default_max_tokens,
                          GenerateRequest* out, ApiError* error);

}  // namespace allot::llm::serve
