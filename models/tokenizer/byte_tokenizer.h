// The plain byte tokenizer of allot's own tiny models: token id b is byte b, and special
// tokens follow from id 256. No merges, no normalization: every text round-trips exactly.
//
// ToHuggingFaceJson() writes the same tokenizer as a Hugging Face tokenizer.json (byte-level
// BPE with an empty merge list), so that vLLM, transformers and LoadTokenizer() all produce the
// same ids for a model directory that allot exported.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "models/tokenizer/added_tokens.h"
#include "models/tokenizer/tokenizer.h"

namespace allot::models {

class ByteTokenizer final : public Tokenizer {
 public:
  // The specials of the tiny models: end of text and the ChatML turn markers.
  static std::vector<std::string> DefaultSpecialTokens();

  explicit ByteTokenizer(std::vector<std::string> special_tokens = DefaultSpecialTokens());

  Result<std::vector<int32_t>> Encode(std::string_view text,
                                      const EncodeOptions& options = {}) const override;
  Result<std::string> Decode(std::span<const int32_t> ids,
                             const DecodeOptions& options = {}) const override;
  Result<std::string> TokenBytes(int32_t id) const override;
  std::optional<int32_t> TokenId(std::string_view text) const override;
  bool IsSpecial(int32_t id) const override { return id >= 256 && id < vocab_size(); }
  int32_t vocab_size() const override { return 256 + static_cast<int32_t>(added_.tokens().size()); }

  // A tokenizer.json that Hugging Face's tokenizers load to the same ids.
  std::string ToHuggingFaceJson() const;

 private:
  AddedVocabulary added_;
};

// A Hugging Face tokenizer.json of a byte-level BPE without merges: `vocab` holds each token's
// raw bytes and id, `special` each special token's id and text. ToHuggingFaceJson() is this
// with the 256 bytes and the tokenizer's specials.
std::string ByteLevelBpeJson(const std::vector<std::pair<std::string, int32_t>>& vocab,
                             const std::vector<std::pair<int32_t, std::string>>& special);

}  // namespace allot::models
