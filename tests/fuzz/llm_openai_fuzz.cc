// Fuzzes what an LLM endpoint sends back: completion and chat bodies, the SSE framing of a
// stream and each streamed chunk, and the models/tokenize/detokenize replies. Any bytes must
// parse or fail with a Status; an SSE stream must give the same events however it is split.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "llm/openai_json.h"

namespace {

std::vector<std::string> Events(std::string_view bytes, size_t step) {
  allot::llm::SseParser sse;
  sse.max_event_bytes = 1 << 16;
  std::vector<std::string> events;
  for (size_t i = 0; i < bytes.size(); i += step) {
    const bool more = sse.Feed(bytes.substr(i, step), [&](std::string_view data) {
      events.emplace_back(data);
      return true;
    });
    if (!more) break;
  }
  return events;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool chat = (data[0] & 1) != 0;
  const size_t step = 1 + (data[0] >> 1);  // how the stream is cut into reads
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);

  (void)allot::llm::ParseCompletion(body, chat, "fuzz");
  (void)allot::llm::ParseModels(body, "fuzz");
  (void)allot::llm::ParseTokenize(body, "fuzz");
  (void)allot::llm::ParseDetokenize(body, "fuzz");
  (void)allot::llm::TokenIdFromString(body);

  // The same stream fed whole and in small reads yields the same events.
  const std::vector<std::string> whole = Events(body, body.size() + 1);
  const std::vector<std::string> cut = Events(body, step);
  if (whole != cut) std::abort();
  for (const std::string& event : whole) {
    std::vector<allot::llm::StreamChunk> chunks;
    allot::llm::Usage usage;
    bool has_usage = false;
    (void)allot::llm::ParseStreamChunk(event, chat, "fuzz", &chunks, &usage, &has_usage);
  }
  return 0;
}
