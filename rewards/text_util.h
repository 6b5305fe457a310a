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

}  // namespace allot::rewards::text
