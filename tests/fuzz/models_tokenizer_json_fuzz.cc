// Fuzzes tokenizer.json: any bytes must load or fail with a Status that names the file (never
// an exception, an abort or a huge allocation), and a tokenizer that loads must encode and
// decode without crashing and with ids inside its vocabulary.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "models/tokenizer/bpe_tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const nlohmann::json root = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return 0;
  auto tok = allot::models::BpeTokenizer::FromJson(root, "fuzz.json");
  if (!tok.ok()) {
    if (tok.status().message().rfind("fuzz.json", 0) != 0) std::abort();  // names the file
    return 0;
  }
  const allot::models::BpeTokenizer& t = **tok;
  auto ids = t.Encode("Hello, world! 123 <|im_end|> \xC3\xA9t\xC3\xA9");
  if (!ids.ok()) return 0;
  for (int32_t id : *ids) {
    if (id < 0 || id >= t.vocab_size()) std::abort();
  }
  (void)t.Decode(*ids);
  return 0;
}
