// Byte-level BPE from a Hugging Face tokenizer.json (GPT-2, Qwen2/2.5/3, Llama 3).
//
// Encoding follows tokenizers' pipeline: added tokens are split out of the raw text first; each
// remaining stretch is normalized (NFC for Qwen), pre-tokenized by the Split regex, mapped to
// bytes and merged by rank-ordered BPE; the post-processor may then add BOS. Merges are read in
// either form that tokenizer.json files use: ["a", "b"] pairs or "a b" strings.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "models/tokenizer/added_tokens.h"
#include "models/tokenizer/normalizer.h"
#include "models/tokenizer/pre_tokenizer.h"
#include "models/tokenizer/tokenizer.h"

namespace allot::models {

class BpeTokenizer final : public Tokenizer {
 public:
  // `where` names the source (a file path) in error messages.
  static Result<std::unique_ptr<BpeTokenizer>> FromJson(const nlohmann::json& root,
                                                        const std::string& where);
  static Result<std::unique_ptr<BpeTokenizer>> FromFile(const std::string& path);

  Result<std::vector<int32_t>> Encode(std::string_view text,
                                      const EncodeOptions& options = {}) const override;
  Result<std::string> Decode(std::span<const int32_t> ids,
                             const DecodeOptions& options = {}) const override;
  Result<std::string> TokenBytes(int32_t id) const override;
  std::optional<int32_t> TokenId(std::string_view text) const override;
  bool IsSpecial(int32_t id) const override;
  int32_t vocab_size() const override { return static_cast<int32_t>(id_to_bytes_.size()); }

  const AddedVocabulary& added_tokens() const { return added_; }

 private:
  BpeTokenizer() = default;
  static Result<std::unique_ptr<BpeTokenizer>> FromCheckedJson(const nlohmann::json& root,
                                                               const std::string& where);

  // Appends the BPE encoding of one pre-token's bytes.
  Status EncodeWord(std::string_view bytes, std::vector<int32_t>* out) const;
  void Merge(std::vector<int32_t>* ids) const;

  struct MergeRule {
    int32_t rank;
    int32_t merged;
  };
  static uint64_t PairKey(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }

  Normalizer normalizer_;
  PreTokenizer pre_tokenizer_;
  AddedVocabulary added_;
  std::vector<int32_t> bos_ids_;  // TemplateProcessing "single": special tokens before $A
  std::vector<int32_t> eos_ids_;  // ... and after it

  std::unordered_map<std::string, int32_t> bytes_to_id_;
  std::vector<std::string> id_to_bytes_;  // raw bytes of vocabulary tokens / added content
  std::vector<int8_t> id_kind_;           // 0 unused, 1 vocabulary, 2 added, 3 added special
  std::array<int32_t, 256> byte_id_{};    // the single-byte token of each byte, or -1
  std::unordered_map<uint64_t, MergeRule> merges_;
  bool ignore_merges_ = false;
  int32_t unk_id_ = -1;

  // Word -> ids cache. Sharded so that concurrent encoders rarely contend.
  static constexpr size_t kCacheShards = 16;
  static constexpr size_t kCacheEntriesPerShard = 8192;
  static constexpr size_t kMaxCachedWordBytes = 64;
  struct CacheShard {
    std::mutex mu;
    std::unordered_map<std::string, std::vector<int32_t>> words;
  };
  mutable std::array<CacheShard, kCacheShards> cache_;
};

}  // namespace allot::models
