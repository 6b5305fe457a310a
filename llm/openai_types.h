// Requests and responses of the OpenAI-compatible API (as served by vLLM and `allot serve`).
//
// Tokens in, tokens out: a completion prompt may be token ids, and a response keeps the ids the
// server sampled (from `return_token_ids`, or from "token_id:N" logprob tokens) with their
// logprobs, so a rollout never re-tokenizes text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "llm/accounting.h"

namespace allot::llm {

// Sampling and output fields shared by /v1/completions and /v1/chat/completions. Unset fields
// are left out of the request body, so the server's defaults apply.
struct SamplingParams {
  std::optional<int> n;
  std::optional<int> max_tokens;
  std::optional<double> temperature;
  std::optional<double> top_p;
  std::optional<int> top_k;
  std::optional<int64_t> seed;
  std::vector<std::string> stop;
  std::vector<int64_t> stop_token_ids;
  // Completions: "logprobs": k. Chat: "logprobs": true, "top_logprobs": k.
  std::optional<int> logprobs;
  std::optional<int> prompt_logprobs;
  std::optional<bool> echo;
  std::optional<bool> return_token_ids;
  std::optional<bool> return_tokens_as_token_ids;
  std::optional<bool> include_stop_str_in_output;
  std::optional<bool> skip_special_tokens;
};

struct CompletionRequest {
  std::string model;   // empty = the endpoint's model (or a LoRA name)
  std::string prompt;  // used when prompt_token_ids is empty
  std::vector<int64_t> prompt_token_ids;
  SamplingParams params;
};

struct ChatMessage {
  std::string role;
  std::string content;
};

struct ChatRequest {
  std::string model;
  std::vector<ChatMessage> messages;
  SamplingParams params;
};

struct TopLogprob {
  int64_t token_id = -1;  // -1 when the server sent text only
  std::string token;
  double logprob = 0.0;
};

struct TokenLogprob {
  int64_t token_id = -1;
  std::string token;
  double logprob = 0.0;
  std::vector<TopLogprob> top;
};

struct Choice {
  int index = 0;
  std::string text;                // completion text, or the chat message content
  std::string role;                // chat only
  std::vector<int64_t> token_ids;  // sampled ids when the server returned them
  std::vector<TokenLogprob> logprobs;
  std::string finish_reason;  // "stop", "length", ...
  std::string stop_reason;    // vLLM: the stop string or id that ended the choice
  std::vector<int64_t> prompt_token_ids;
  // vLLM prompt_logprobs: one entry per prompt token, the first usually absent (nullopt).
  std::vector<std::optional<TopLogprob>> prompt_logprobs;
};

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
};

struct Completion {
  std::string id;
  std::string model;
  std::vector<Choice> choices;
  Usage usage;
  std::vector<int64_t> prompt_token_ids;  // response-level prompt ids (vLLM)
  // allot serve: the sha256 of the adapter file that decoded the request ("" when the server
  // sent none, e.g. vLLM, or for the base model).
  std::string adapter_sha256;
  CallRecord record;  // accounting for this call
};

// One SSE chunk of a streamed completion.
struct StreamChunk {
  int index = 0;
  std::string text;                    // delta
  std::vector<int64_t> token_ids;      // delta ids when returned
  std::vector<TokenLogprob> logprobs;  // delta logprobs
  std::string finish_reason;           // set on the choice's last chunk
};

struct ModelInfo {
  std::string id;
  std::string owned_by;
  std::string parent;  // vLLM: base model of a LoRA adapter
  int64_t max_model_len = 0;
};

struct LoraAdapter {
  std::string name;
  std::string path;
  bool load_inplace = false;  // replace an adapter of the same name (vLLM)
};

}  // namespace allot::llm
