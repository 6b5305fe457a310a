// Fuzzes the body of a request to `allot serve` (/v1/completions and /v1/chat/completions), the
// request parsing alone (llm/serve/api_request.cc, no model code): any JSON must become a
// GenerateRequest or an OpenAI error (400) that names a message, and an accepted request must
// hold what the engine relies on. The first byte picks the route.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "llm/serve/api_request.h"

namespace serve = allot::llm::serve;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool chat = (data[0] & 1) != 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  const nlohmann::json body = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return 0;
  serve::GenerateRequest request;
  serve::ApiError error;
  if (!serve::ParseGenerateRequest(body, chat, /*default_max_tokens=*/64, &request, &error)) {
    if (error.message.empty()) std::abort();  // a rejection must say why
    return 0;
  }
  if (!request.params.Validate().ok()) std::abort();
  if (request.logprobs < -1 || request.logprobs > serve::kMaxLogprobs) std::abort();
  if (request.params.n < 1 || request.params.n > 128 || request.params.max_tokens < 1) {
    std::abort();
  }
  if (chat ? request.messages.empty() : request.prompts.empty()) std::abort();
  for (const auto& p : request.prompts) {
    if (p.is_ids && p.ids.empty()) std::abort();
    for (int32_t id : p.ids) {
      if (id < 0) std::abort();
    }
  }
  for (int32_t id : request.params.stop_token_ids) {
    if (id < 0) std::abort();
  }
  return 0;
}
