// Fuzzes the body of a request to `allot serve` (/v1/completions and /v1/chat/completions):
// any JSON must become a GenerateRequest or an OpenAI error (400), and an accepted request must
// satisfy the limits the engine relies on.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "llm/serve/api_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool chat = (data[0] & 1) != 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  const nlohmann::json body = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return 0;
  allot::llm::serve::GenerateRequest request;
  allot::llm::serve::ApiError error;
  if (!allot::llm::serve::ParseGenerateRequest(body, chat, /*default_max_tokens=*/64, &request,
                                               &error)) {
    return 0;
  }
  if (request.logprobs > allot::llm::serve::kMaxLogprobs) std::abort();
  if (request.params.n < 1 || request.params.max_tokens < 0) std::abort();
  if (!chat && request.prompts.empty()) std::abort();
  return 0;
}
