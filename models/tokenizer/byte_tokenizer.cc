#include "models/tokenizer/byte_tokenizer.h"

#include <nlohmann/json.hpp>

#include "models/tokenizer/byte_level.h"
#include "models/tokenizer/utf8.h"

namespace allot::models {

std::vector<std::string> ByteTokenizer::DefaultSpecialTokens() {
  return {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
}

ByteTokenizer::ByteTokenizer(std::vector<std::string> special_tokens) {
  std::vector<AddedToken> tokens;
  for (size_t i = 0; i < special_tokens.size(); ++i) {
    AddedToken t;
    t.id = 256 + static_cast<int32_t>(i);
    t.content = std::move(special_tokens[i]);
    t.special = true;
    tokens.push_back(std::move(t));
  }
  added_ = AddedVocabulary(std::move(tokens));
}

Result<std::vector<int32_t>> ByteTokenizer::Encode(std::string_view text,
                                                   const EncodeOptions& options) const {
  const size_t bad = FindInvalidUtf8(text);
  if (bad != std::string_view::npos) {
    return InvalidArgument("tokenizer input is not valid UTF-8 at byte " + std::to_string(bad));
  }
  std::vector<int32_t> out;
  out.reserve(text.size());
  for (const auto& segment : added_.Split(text, options.parse_special)) {
    if (segment.token != nullptr) {
      out.push_back(segment.token->id);
      continue;
    }
    for (unsigned char c : segment.text) out.push_back(c);
  }
  return out;
}

Result<std::string> ByteTokenizer::Decode(std::span<const int32_t> ids,
                                          const DecodeOptions& options) const {
  std::string bytes;
  bytes.reserve(ids.size());
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab_size()) {
      return OutOfRange("token id " + std::to_string(id) + " is outside [0, " +
                        std::to_string(vocab_size()) + ")");
    }
    if (id < 256) {
      bytes.push_back(static_cast<char>(id));
    } else if (!options.skip_special_tokens) {
      bytes += added_.tokens()[id - 256].content;
    }
  }
  return ToValidUtf8(bytes);
}

Result<std::string> ByteTokenizer::TokenBytes(int32_t id) const {
  if (id < 0 || id >= vocab_size()) {
    return OutOfRange("token id " + std::to_string(id) + " is outside [0, " +
                      std::to_string(vocab_size()) + ")");
  }
  if (id < 256) return std::string(1, static_cast<char>(id));
  return added_.tokens()[id - 256].content;
}

std::optional<int32_t> ByteTokenizer::TokenId(std::string_view text) const {
  if (text.size() == 1) return static_cast<unsigned char>(text[0]);
  if (const AddedToken* t = added_.FindByContent(text)) return t->id;
  return std::nullopt;
}

std::string ByteTokenizer::ToHuggingFaceJson() const {
  std::vector<std::pair<std::string, int32_t>> vocab;
  for (int b = 0; b < 256; ++b) vocab.emplace_back(std::string(1, static_cast<char>(b)), b);
  std::vector<std::pair<int32_t, std::string>> special;
  for (const auto& t : added_.tokens()) special.emplace_back(t.id, t.content);
  return ByteLevelBpeJson(vocab, special);
}

std::string ByteLevelBpeJson(const std::vector<std::pair<std::string, int32_t>>& vocab,
                             const std::vector<std::pair<int32_t, std::string>>& special) {
  using nlohmann::json;
  json spelled = json::object();
  for (const auto& [bytes, id] : vocab) spelled[BytesToTokenSpelling(bytes)] = id;
  json added = json::array();
  for (const auto& [id, content] : special) {
    added.push_back({{"id", id},
                     {"content", content},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", true}});
  }
  const json byte_level = {{"type", "ByteLevel"},
                           {"add_prefix_space", false},
                           {"trim_offsets", false},
                           {"use_regex", false}};
  json root = {{"version", "1.0"},
               {"truncation", nullptr},
               {"padding", nullptr},
               {"added_tokens", added},
               {"normalizer", nullptr},
               {"pre_tokenizer", byte_level},
               {"post_processor", byte_level},
               {"decoder", byte_level},
               {"model",
                {{"type", "BPE"},
                 {"dropout", nullptr},
                 {"unk_token", nullptr},
                 {"continuing_subword_prefix", ""},
                 {"end_of_word_suffix", ""},
                 {"fuse_unk", false},
                 {"byte_fallback", false},
                 {"ignore_merges", false},
                 {"vocab", spelled},
                 {"merges", json::array()}}}};
  return root.dump(2);
}

}  // namespace allot::models
