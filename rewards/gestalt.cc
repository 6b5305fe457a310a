#include "rewards/gestalt.h"

#include <vector>

namespace allot::rewards {
namespace {

struct Block {
  size_t i = 0, j = 0, size = 0;
};

// Longest common block of a[alo,ahi) and b[blo,bhi). Rows scan `a` in increasing order and a
// block only replaces the best when strictly longer, so ties go to the earliest start in `a`
// and then in `b`, as in difflib.
Block LongestMatch(std::string_view a, std::string_view b, size_t alo, size_t ahi, size_t blo,
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

size_t GestaltMatches(std::string_view a, std::string_view b) {
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

double GestaltSimilarity(std::string_view a, std::string_view b) {
  const size_t total = a.size() + b.size();
  if (total == 0) return 1.0;
  return 2.0 * static_cast<double>(GestaltMatches(a, b)) / static_cast<double>(total);
}

}  // namespace allot::rewards
