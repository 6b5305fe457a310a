// Small character and string helpers shared by the answer extractor, normaliser and
// equivalence checker. Internal to rewards/.
#pragma once

#include <cctype>
#include <string>
#include <string_view>

namespace allot::rewards::text {

inline bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }
inline bool IsAlpha(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }
inline bool IsDigit(char c) { return c >= '0' && c <= '9'; }
inline bool IsAlnum(char c) { return IsAlpha(c) || IsDigit(c); }
inline char Lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

// Whether s[pos..] starts with `word` (lower case), ignoring the case of `s`.
inline bool StartsWithIgnoreCase(std::string_view s, size_t pos, std::string_view word) {
  if (pos + word.size() > s.size()) return false;
  for (size_t i = 0; i < word.size(); ++i) {
    if (Lower(s[pos + i]) != word[i]) return false;
  }
  return true;
}

inline std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

// Non-overlapping-start occurrences of `needle` in `s`.
inline size_t CountOf(std::string_view s, std::string_view needle) {
  size_t n = 0;
  for (size_t p = s.find(needle); p != std::string_view::npos; p = s.find(needle, p + 1)) ++n;
  return n;
}

// Runs of whitespace become one space; leading and trailing whitespace go.
inline std::string CollapseSpaces(std::string_view s) {
  std::string out;
  bool space = false;
  for (char c : s) {
    if (IsSpace(c)) {
      space = true;
      continue;
    }
    if (space && !out.empty()) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

// Length of the number starting at s[i] ("-1,234.5", "3/4", ".5"), or 0.
inline size_t NumberLength(std::string_view s, size_t i) {
  size_t p = i;
  if (p < s.size() && (s[p] == '-' || s[p] == '+')) ++p;
  size_t digits_start = p;
  while (p < s.size() && IsDigit(s[p])) ++p;
  size_t int_digits = p - digits_start;
  // Thousands groups: ",ddd" only after 1-3 leading digits, and only whole groups.
  if (int_digits >= 1 && int_digits <= 3) {
    while (p + 3 < s.size() && s[p] == ',' && IsDigit(s[p + 1]) && IsDigit(s[p + 2]) &&
           IsDigit(s[p + 3]) && (p + 4 >= s.size() || !IsDigit(s[p + 4]))) {
      p += 4;
      int_digits += 3;
    }
  }
  if (p < s.size() && s[p] == '.' && p + 1 < s.size() && IsDigit(s[p + 1])) {
    ++p;
    while (p < s.size() && IsDigit(s[p])) ++p;
  } else if (int_digits == 0) {
    return 0;
  }
  if (p + 1 < s.size() && s[p] == '/' && IsDigit(s[p + 1])) {
    ++p;
    while (p < s.size() && IsDigit(s[p])) ++p;
  }
  return p - i;
}

// Whether a number starts at s[i] and not inside a word or another number.
inline bool NumberStartsAt(std::string_view s, size_t i) {
  if (i > 0 && (IsAlpha(s[i - 1]) || IsDigit(s[i - 1]) || s[i - 1] == '.')) return false;
  if (s[i] == '-' && i > 0 && (IsDigit(s[i - 1]))) return false;
  return NumberLength(s, i) > 0;
}

inline std::string WithoutCommas(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c != ',') out += c;
  }
  return out;
}

// Calls fn(word, begin) for each maximal run of letters in `s`, left to right, with the offset
// where it begins; fn returns false to stop.
template <typename Fn>
void ForEachWord(std::string_view s, Fn&& fn) {
  for (size_t i = 0; i < s.size();) {
    if (!IsAlpha(s[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < s.size() && IsAlpha(s[j])) ++j;
    if (!fn(s.substr(i, j - i), i)) return;
    i = j;
  }
}

}  // namespace allot::rewards::text
