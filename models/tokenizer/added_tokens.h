// Added and special tokens: strings that are matched in the raw text before normalization and
// BPE, and map straight to their ids ("<|im_start|>", "<think>", ...).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace allot::models {

struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool special = false;      // skipped by Decode(skip_special) and by Encode(!parse_special)
  bool lstrip = false;       // swallows the whitespace on its left
  bool rstrip = false;       // swallows the whitespace on its right
  bool single_word = false;  // matches only when not inside a word
};

class AddedVocabulary {
 public:
  AddedVocabulary() = default;
  explicit AddedVocabulary(std::vector<AddedToken> tokens);

  // A stretch of the input: either plain text (token == nullptr) or one added token.
  struct Segment {
    std::string_view text;
    const AddedToken* token = nullptr;
  };

  // Cuts `text` at added tokens, leftmost first and longest at a position (the
  // Aho-Corasick LeftmostLongest rule of Hugging Face's tokenizers). With `parse_special`
  // false, tokens marked special are left in the text.
  std::vector<Segment> Split(std::string_view text, bool parse_special) const;

  const std::vector<AddedToken>& tokens() const { return tokens_; }
  const AddedToken* FindById(int32_t id) const;
  const AddedToken* FindByContent(std::string_view content) const;

 private:
  std::vector<AddedToken> tokens_;
  // For each first byte, indices into tokens_ ordered by decreasing length.
  std::array<std::vector<uint32_t>, 256> by_first_byte_;
};

}  // namespace allot::models
