#include "models/tokenizer/pre_tokenizer.h"

#include <nlohmann/json.hpp>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "models/tokenizer/json_field.h"

namespace allot::models {
namespace {

// GPT-2's pattern, used by ByteLevel when "use_regex" is true.
constexpr char kGpt2Pattern[] =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

size_t Utf8CharLength(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  return 4;
}

}  // namespace

struct RegexSplitter::Code {
  pcre2_code* code = nullptr;
  ~Code() { pcre2_code_free(code); }
};

Result<RegexSplitter> RegexSplitter::Compile(const std::string& pattern, bool literal,
                                             Behavior behavior, bool invert) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  // PCRE2_LITERAL admits PCRE2_UTF but not PCRE2_UCP (which only matters for classes anyway).
  const uint32_t options = literal ? (PCRE2_UTF | PCRE2_LITERAL) : (PCRE2_UTF | PCRE2_UCP);
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   options, &error, &offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof(message));
    return InvalidArgument("regex /" + pattern + "/ at offset " + std::to_string(offset) + ": " +
                           reinterpret_cast<const char*>(message));
  }
  // JIT is an optimisation only: without it (an unsupported CPU) matching is interpreted.
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  auto holder = std::make_shared<Code>();
  holder->code = code;
  RegexSplitter s;
  s.code_ = std::move(holder);
  s.behavior_ = behavior;
  s.invert_ = invert;
  return s;
}

void RegexSplitter::Split(std::string_view text, std::vector<std::string_view>* out) const {
  if (text.empty()) return;
  struct Segment {
    size_t begin, end;
    bool is_match;
  };
  std::vector<Segment> segments;
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(code_->code, nullptr);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0;
  size_t last = 0;
  while (pos < text.size()) {
    // Input was validated as UTF-8 once by the tokenizer.
    const int rc =
        pcre2_match(code_->code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, md, nullptr);
    if (rc < 0) break;  // PCRE2_ERROR_NOMATCH, or a resource limit: the rest is one gap
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    const size_t begin = ov[0], end = ov[1];
    if (end == begin) {
      // Empty matches split nothing; step over one character and search again.
      pos = begin + Utf8CharLength(static_cast<unsigned char>(text[begin]));
      continue;
    }
    if (begin > last) segments.push_back({last, begin, false});
    segments.push_back({begin, end, true});
    last = pos = end;
  }
  pcre2_match_data_free(md);
  if (last < text.size()) segments.push_back({last, text.size(), false});
  if (invert_) {
    for (auto& s : segments) s.is_match = !s.is_match;
  }

  const auto emit = [&](size_t b, size_t e) {
    if (e > b) out->push_back(text.substr(b, e - b));
  };
  switch (behavior_) {
    case Behavior::kIsolated:
      for (const auto& s : segments) emit(s.begin, s.end);
      break;
    case Behavior::kRemoved:
      for (const auto& s : segments) {
        if (!s.is_match) emit(s.begin, s.end);
      }
      break;
    case Behavior::kMergedWithPrevious: {
      // A match joins the piece before it unless that piece is itself a match
      // (tokenizers: "the-final--countdown" -> "the-", "final-", "-", "countdown").
      std::vector<std::pair<size_t, size_t>> pieces;
      bool previous_match = false;
      for (const auto& s : segments) {
        if (s.is_match && !previous_match && !pieces.empty()) {
          pieces.back().second = s.end;
        } else {
          pieces.push_back({s.begin, s.end});
        }
        previous_match = s.is_match;
      }
      for (const auto& [b, e] : pieces) emit(b, e);
      break;
    }
    case Behavior::kMergedWithNext: {
      // Mirror image: "the-final--countdown" -> "the", "-final", "-", "-countdown".
      std::vector<std::pair<size_t, size_t>> pieces;
      bool next_match = false;
      for (auto it = segments.rbegin(); it != segments.rend(); ++it) {
        if (it->is_match && !next_match && !pieces.empty()) {
          pieces.back().first = it->begin;
        } else {
          pieces.push_back({it->begin, it->end});
        }
        next_match = it->is_match;
      }
      for (auto it = pieces.rbegin(); it != pieces.rend(); ++it) emit(it->first, it->second);
      break;
    }
    case Behavior::kContiguous: {
      // Runs of adjacent matches become one piece.
      size_t i = 0;
      while (i < segments.size()) {
        size_t j = i;
        if (segments[i].is_match) {
          while (j + 1 < segments.size() && segments[j + 1].is_match) ++j;
        }
        emit(segments[i].begin, segments[j].end);
        i = j + 1;
      }
      break;
    }
  }
}

Status PreTokenizer::ParseStage(const nlohmann::json& node, const std::string& where,
                                PreTokenizer* self) {
  if (!node.is_object() || !node.contains("type") || !node["type"].is_string()) {
    return InvalidArgument(where + ": pre_tokenizer: expected an object with a string \"type\"");
  }
  const std::string type = node["type"].get<std::string>();
  if (type == "Sequence") {
    if (!node.contains("pretokenizers") || !node["pretokenizers"].is_array()) {
      return InvalidArgument(where + ": pre_tokenizer.pretokenizers: expected an array");
    }
    for (const auto& child : node["pretokenizers"]) {
      ALLOT_RETURN_IF_ERROR(ParseStage(child, where, self));
    }
    return Status::Ok();
  }
  if (type == "Split") {
    const auto& pattern = node.value("pattern", nlohmann::json());
    std::string text;
    bool literal;
    if (pattern.is_object() && pattern.contains("Regex") && pattern["Regex"].is_string()) {
      text = pattern["Regex"].get<std::string>();
      literal = false;
    } else if (pattern.is_object() && pattern.contains("String") && pattern["String"].is_string()) {
      text = pattern["String"].get<std::string>();
      literal = true;
    } else {
      return InvalidArgument(where +
                             ": pre_tokenizer Split.pattern: expected {\"Regex\": ...} or "
                             "{\"String\": ...}");
    }
    ALLOT_ASSIGN_OR_RETURN(const std::string behavior,
                           OptionalField<std::string>(node, "behavior", "Isolated", where,
                                                      "pre_tokenizer Split.behavior"));
    RegexSplitter::Behavior b;
    if (behavior == "Isolated") {
      b = RegexSplitter::Behavior::kIsolated;
    } else if (behavior == "Removed") {
      b = RegexSplitter::Behavior::kRemoved;
    } else if (behavior == "MergedWithPrevious") {
      b = RegexSplitter::Behavior::kMergedWithPrevious;
    } else if (behavior == "MergedWithNext") {
      b = RegexSplitter::Behavior::kMergedWithNext;
    } else if (behavior == "Contiguous") {
      b = RegexSplitter::Behavior::kContiguous;
    } else {
      return InvalidArgument(where + ": pre_tokenizer Split.behavior: unknown value \"" + behavior +
                             "\"");
    }
    ALLOT_ASSIGN_OR_RETURN(const bool invert, OptionalField<bool>(node, "invert", false, where,
                                                                  "pre_tokenizer Split.invert"));
    auto splitter = RegexSplitter::Compile(text, literal, b, invert);
    if (!splitter.ok()) return splitter.status().Annotate(where + ": pre_tokenizer Split.pattern");
    Stage stage;
    stage.splitter = std::move(splitter).value();
    stage.has_regex = true;
    self->stages_.push_back(std::move(stage));
    return Status::Ok();
  }
  if (type == "ByteLevel") {
    self->byte_level_ = true;
    Stage stage;
    ALLOT_ASSIGN_OR_RETURN(stage.add_prefix_space,
                           OptionalField<bool>(node, "add_prefix_space", false, where,
                                               "pre_tokenizer ByteLevel.add_prefix_space"));
    ALLOT_ASSIGN_OR_RETURN(
        const bool use_regex,
        OptionalField<bool>(node, "use_regex", true, where, "pre_tokenizer ByteLevel.use_regex"));
    if (use_regex) {
      ALLOT_ASSIGN_OR_RETURN(
          stage.splitter,
          RegexSplitter::Compile(kGpt2Pattern, false, RegexSplitter::Behavior::kIsolated, false));
      stage.has_regex = true;
    }
    if (stage.has_regex || stage.add_prefix_space) self->stages_.push_back(std::move(stage));
    return Status::Ok();
  }
  return Unimplemented(where + ": pre_tokenizer.type \"" + type +
                       "\" is not supported (supported: Split, ByteLevel, Sequence)");
}

Result<PreTokenizer> PreTokenizer::FromJson(const nlohmann::json& node, const std::string& where) {
  PreTokenizer p;
  if (node.is_null()) return p;
  ALLOT_RETURN_IF_ERROR(ParseStage(node, where, &p));
  return p;
}

void PreTokenizer::Run(std::string_view text, std::deque<std::string>* arena,
                       std::vector<std::string_view>* out) const {
  std::vector<std::string_view> current{text};
  std::vector<std::string_view> next;
  for (const Stage& stage : stages_) {
    next.clear();
    for (std::string_view piece : current) {
      if (stage.add_prefix_space && (piece.empty() || piece.front() != ' ')) {
        arena->push_back(" " + std::string(piece));
        piece = arena->back();
      }
      if (stage.has_regex) {
        stage.splitter.Split(piece, &next);
      } else if (!piece.empty()) {
        next.push_back(piece);
      }
    }
    current.swap(next);
  }
  for (std::string_view piece : current) {
    if (!piece.empty()) out->push_back(piece);
  }
}

}  // namespace allot::models
