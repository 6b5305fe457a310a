// Encoding OpenAI-compatible request bodies and decoding responses, without trusting the server.
//
// Every decoder returns a Status for a malformed or truncated body, invalid UTF-8, wrong JSON
// types or missing choices; the message starts with `where` (the endpoint and URL) and names the
// JSON path that was wrong. Nothing here throws or crashes on server input.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "llm/openai_types.h"

namespace allot::llm {

std::string EncodeCompletionRequest(const CompletionRequest& req, const std::string& model,
                                    bool stream);
std::string EncodeChatRequest(const ChatRequest& req, const std::string& model, bool stream);

// Parses a /v1/completions (chat = false) or /v1/chat/completions (chat = true) response.
Result<Completion> ParseCompletion(std::string_view body, bool chat, const std::string& where);

// Parses one SSE `data:` payload of a streamed response. Chunks go to `chunks` (one per choice
// delta); a usage object, when present, to `usage`.
Status ParseStreamChunk(std::string_view data, bool chat, const std::string& where,
                        std::vector<StreamChunk>* chunks, Usage* usage, bool* has_usage);

Result<std::vector<ModelInfo>> ParseModels(std::string_view body, const std::string& where);
Result<std::vector<int64_t>> ParseTokenize(std::string_view body, const std::string& where);
Result<std::string> ParseDetokenize(std::string_view body, const std::string& where);

// "token_id:123" -> 123 (vLLM's return_tokens_as_token_ids form); -1 for any other string.
int64_t TokenIdFromString(std::string_view token);

bool IsValidUtf8(std::string_view s);

// Incremental server-sent-events splitter: feed bytes as they arrive, get each event's data.
class SseParser {
 public:
  // Calls `on_data` with the joined `data:` lines of each complete event. Returns false as soon
  // as on_data does, or when the buffered partial event exceeds `max_event_bytes`.
  bool Feed(std::string_view bytes, const std::function<bool(std::string_view)>& on_data);
  bool overflowed() const { return overflowed_; }
  size_t max_event_bytes = 16 << 20;

 private:
  std::string buf_;
  size_t scanned_ = 0;
  bool overflowed_ = false;
};

}  // namespace allot::llm
