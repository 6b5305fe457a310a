#include "rewards/gestalt.h"

#include <utf8proc.h>

#include <algorithm>
#include <vector>

namespace allot::rewards {
namespace {

struct Block {
  size_t i = 0, j = 0, size = 0;
};

// Longest common block of a[alo,ahi) and b[blo,bhi). Rows scan `a` in increasing order and a
// block only replaces the best when strictly longer, so ties go to the earliest start in `a`
// and then in `b`, as in difflib.
Block LongestMatch(std::u32string_view a, std::u32string_view b, size_t alo, size_t ahi, size_t blo,
                   size_t bhi, std::vector<size_t>& prev, std::vector<size_t>& cur) {
  Block best{alo, blo, 0};
  const size_t width = bhi - blo;
  std::fill(prev.begin(), prev.begin() + width + 1, 0);
  for (size_t i = alo; i < ahi; ++i) {
    cur[0] = 0;
    for (size_t j = blo; j < bhi; ++j) {
      size_t k = a[i] == b[j] ? prev[j - blo] + 1 : 0;
      cur[j - blo + 1] = k;
      if (k > best.size) best = {i + 1 - k, j + 1 - k, k};
    }
    std::swap(prev, cur);
  }
  return best;
}

}  // namespace

std::u32string DecodeCodePoints(std::string_view text) {
  std::u32string out;
  out.reserve(text.size());
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  utf8proc_ssize_t left = static_cast<utf8proc_ssize_t>(text.size());
  while (left > 0) {
    utf8proc_int32_t cp = 0;
    utf8proc_ssize_t n = utf8proc_iterate(p, left, &cp);
    if (n <= 0) {
      out.push_back(static_cast<char32_t>(0x110000 + *p));
      n = 1;
    } else {
      out.push_back(static_cast<char32_t>(cp));
    }
    p += n;
    left -= n;
  }
  return out;
}

size_t GestaltMatches(std::u32string_view a, std::u32string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  size_t matches = 0;
  struct Range {
    size_t alo, ahi, blo, bhi;
  };
  std::vector<Range> todo = {{0, a.size(), 0, b.size()}};  // explicit stack: no deep recursion
  while (!todo.empty()) {
    Range r = todo.back();
    todo.pop_back();
    if (r.alo >= r.ahi || r.blo >= r.bhi) continue;
    Block m = LongestMatch(a, b, r.alo, r.ahi, r.blo, r.bhi, prev, cur);
    if (m.size == 0) continue;
    matches += m.size;
    todo.push_back({r.alo, m.i, r.blo, m.j});
    todo.push_back({m.i + m.size, r.ahi, m.j + m.size, r.bhi});
  }
  return matches;
}

size_t GestaltMatches(std::string_view a, std::string_view b) {
  return GestaltMatches(DecodeCodePoints(a), DecodeCodePoints(b));
}

double GestaltSimilarity(std::u32string_view a, std::u32string_view b) {
  const size_t total = a.size() + b.size();
  if (total == 0) return 1.0;
  return 2.0 * static_cast<double>(GestaltMatches(a, b)) / static_cast<double>(total);
}

double GestaltSimilarity(std::string_view a, std::string_view b) {
  return GestaltSimilarity(DecodeCodePoints(a), DecodeCodePoints(b));
}

}  // namespace allot::rewards
