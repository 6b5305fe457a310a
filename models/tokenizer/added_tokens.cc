#include "models/tokenizer/added_tokens.h"

#include <algorithm>

#include <utf8proc.h>

#include "models/tokenizer/utf8.h"

namespace allot::models {
namespace {

bool IsWhitespace(char32_t cp) {
  if (cp == ' ' || (cp >= '\t' && cp <= '\r') || cp == 0x85) return true;
  const auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return cat == UTF8PROC_CATEGORY_ZS || cat == UTF8PROC_CATEGORY_ZL || cat == UTF8PROC_CATEGORY_ZP;
}

bool IsWordChar(char32_t cp) {
  if (cp == '_') return true;
  const auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return (cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO) ||
         (cat >= UTF8PROC_CATEGORY_ND && cat <= UTF8PROC_CATEGORY_NO) ||
         (cat >= UTF8PROC_CATEGORY_MN && cat <= UTF8PROC_CATEGORY_ME);
}

// The code point that ends just before byte offset `end` (valid UTF-8 assumed).
char32_t PreviousCodePoint(std::string_view s, size_t end, size_t* start) {
  size_t b = end - 1;
  while (b > 0 && (static_cast<unsigned char>(s[b]) & 0xC0) == 0x80) --b;
  size_t pos = b;
  *start = b;
  return NextCodePoint(s, &pos);
}

}  // namespace

AddedVocabulary::AddedVocabulary(std::vector<AddedToken> tokens) : tokens_(std::move(tokens)) {
  for (uint32_t i = 0; i < tokens_.size(); ++i) {
    if (tokens_[i].content.empty()) continue;
    by_first_byte_[static_cast<unsigned char>(tokens_[i].content[0])].push_back(i);
  }
  for (auto& bucket : by_first_byte_) {
    std::stable_sort(bucket.begin(), bucket.end(), [&](uint32_t a, uint32_t b) {
      return tokens_[a].content.size() > tokens_[b].content.size();
    });
  }
}

const AddedToken* AddedVocabulary::FindById(int32_t id) const {
  for (const auto& t : tokens_) {
    if (t.id == id) return &t;
  }
  return nullptr;
}

const AddedToken* AddedVocabulary::FindByContent(std::string_view content) const {
  for (const auto& t : tokens_) {
    if (t.content == content) return &t;
  }
  return nullptr;
}

std::vector<AddedVocabulary::Segment> AddedVocabulary::Split(std::string_view text,
                                                             bool parse_special) const {
  std::vector<Segment> out;
  size_t text_start = 0;  // start of the pending plain-text stretch
  size_t i = 0;
  while (i < text.size()) {
    const auto& bucket = by_first_byte_[static_cast<unsigned char>(text[i])];
    const AddedToken* found = nullptr;
    for (uint32_t idx : bucket) {
      const AddedToken& t = tokens_[idx];
      if (t.special && !parse_special) continue;
      if (text.compare(i, t.content.size(), t.content) != 0) continue;
      if (t.single_word) {
        size_t s;
        const bool word_before = i > 0 && IsWordChar(PreviousCodePoint(text, i, &s));
        size_t after = i + t.content.size();
        const bool word_after = after < text.size() && IsWordChar(NextCodePoint(text, &after));
        if (word_before || word_after) continue;
      }
      found = &t;
      break;
    }
    if (found == nullptr) {
      ++i;
      continue;
    }
    size_t match_begin = i;
    size_t match_end = i + found->content.size();
    if (found->lstrip) {
      while (match_begin > text_start) {
        size_t s;
        if (!IsWhitespace(PreviousCodePoint(text, match_begin, &s))) break;
        match_begin = s;
      }
    }
    if (found->rstrip) {
      while (match_end < text.size()) {
        size_t next = match_end;
        if (!IsWhitespace(NextCodePoint(text, &next))) break;
        match_end = next;
      }
    }
    if (match_begin > text_start) {
      out.push_back({text.substr(text_start, match_begin - text_start), nullptr});
    }
    out.push_back({text.substr(match_begin, match_end - match_begin), found});
    text_start = i = match_end;
  }
  if (text_start < text.size()) out.push_back({text.substr(text_start), nullptr});
  return out;
}

}  // namespace allot::models
