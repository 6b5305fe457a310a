// The "pre_tokenizer" stage of a Hugging Face tokenizer.json: splits normalized text into the
// pieces that BPE then encodes one at a time.
//
// Supported: Split (regex or literal pattern; behaviours Isolated, Removed, MergedWithPrevious,
// MergedWithNext, Contiguous; invert), ByteLevel (add_prefix_space, use_regex with GPT-2's
// pattern) and Sequence. Regexes run through PCRE2 in UTF + UCP mode with JIT, which accepts the
// Oniguruma syntax that tokenizer.json files use (lookahead, (?i:...) groups, \p{L}, \p{N}).
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/status.h"

namespace allot::models {

// One compiled PCRE2 pattern. Thread-safe: matching allocates its own match data.
class RegexSplitter {
 public:
  enum class Behavior { kIsolated, kRemoved, kMergedWithPrevious, kMergedWithNext, kContiguous };

  // `literal` escapes nothing: the pattern is matched as plain text.
  static Result<RegexSplitter> Compile(const std::string& pattern, bool literal, Behavior behavior,
                                       bool invert);

  // Appends the pieces of `text` (valid UTF-8) to `out`; the views point into `text`.
  void Split(std::string_view text, std::vector<std::string_view>* out) const;

 private:
  struct Code;
  std::shared_ptr<const Code> code_;
  Behavior behavior_ = Behavior::kIsolated;
  bool invert_ = false;
};

class PreTokenizer {
 public:
  // The identity pre-tokenizer (the whole text is one piece).
  PreTokenizer() = default;

  // Parses tokenizer.json's "pre_tokenizer" node; `where` names the file for messages.
  static Result<PreTokenizer> FromJson(const nlohmann::json& node, const std::string& where);

  // True when a ByteLevel stage is present (byte-level BPE needs it).
  bool byte_level() const { return byte_level_; }

  // Splits `text` into pieces appended to `out`. Pieces view `text` or strings kept in `arena`
  // (for a prefix space), so both must outlive the pieces.
  void Run(std::string_view text, std::deque<std::string>* arena,
           std::vector<std::string_view>* out) const;

 private:
  struct Stage {
    RegexSplitter splitter;  // used when has_regex
    bool has_regex = false;
    bool add_prefix_space = false;  // ByteLevel's option
  };
  static Status ParseStage(const nlohmann::json& node, const std::string& where,
                           PreTokenizer* self);

  std::vector<Stage> stages_;
  bool byte_level_ = false;
};

}  // namespace allot::models
