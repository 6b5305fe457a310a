// Gestalt pattern matching (Ratcliff/Obershelp), the similarity of DeepTool's action-centric
// process reward (DeepTool Sec. 2.3.2, Eq. 8; notes.md).
//
// ratio = 2*M / T, where T is the total length of both strings and M the number of matched
// characters: take the longest common block (earliest in `a`, then earliest in `b` on ties),
// then recurse on the pieces to its left and to its right. This is what Python's
// difflib.SequenceMatcher(None, a, b, autojunk=False).ratio() computes. Two empty strings have
// ratio 1.
//
// Cost is O(|a|*|b|) per level of recursion in the worst case; callers bound the lengths.
#pragma once

#include <cstddef>
#include <string_view>

namespace allot::rewards {

// Number of matched characters M.
size_t GestaltMatches(std::string_view a, std::string_view b);
// 2*M / (|a| + |b|), in [0, 1].
double GestaltSimilarity(std::string_view a, std::string_view b);

}  // namespace allot::rewards
