// The tokenizer interface shared by the Hugging Face byte-level BPE tokenizer and the plain
// byte tokenizer of allot's own tiny models.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace allot::models {

struct EncodeOptions {
  // Match special tokens written in the text ("<|im_start|>"). Turn off for untrusted content
  // that must not be able to forge turn boundaries.
  bool parse_special = true;
  // Apply the tokenizer.json post-processor (Llama 3 prepends <|begin_of_text|>; Qwen adds
  // nothing). Hugging Face's encode() does this by default; chat prompts whose template already
  // holds the BOS text turn it off.
  bool add_special_tokens = true;
};

struct DecodeOptions {
  bool skip_special_tokens = false;
};

// Immutable once built; Encode and Decode are safe to call from many threads.
class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Fails with InvalidArgument when `text` is not valid UTF-8 (naming the byte offset).
  virtual Result<std::vector<int32_t>> Encode(std::string_view text,
                                              const EncodeOptions& options = {}) const = 0;

  // Invalid UTF-8 produced by a cut inside a character becomes U+FFFD, as in Hugging Face.
  // Fails with OutOfRange for an id outside [0, vocab_size()).
  virtual Result<std::string> Decode(std::span<const int32_t> ids,
                                     const DecodeOptions& options = {}) const = 0;

  // The raw bytes of one token (no U+FFFD replacement), for streaming detokenization.
  virtual Result<std::string> TokenBytes(int32_t id) const = 0;

  // The id whose text is exactly `text` (an added token's content, or a vocabulary entry's
  // bytes), if any.
  virtual std::optional<int32_t> TokenId(std::string_view text) const = 0;

  virtual bool IsSpecial(int32_t id) const = 0;

  // One past the largest id.
  virtual int32_t vocab_size() const = 0;
};

// Loads a tokenizer from a tokenizer.json file or a model directory that holds one.
Result<std::unique_ptr<Tokenizer>> LoadTokenizer(const std::string& path);

}  // namespace allot::models
