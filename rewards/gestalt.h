// Gestalt pattern matching (Ratcliff/Obershelp), the similarity of DeepTool's action-centric
// process reward (DeepTool Sec. 2.3.2, Eq. 8; notes.md).
//
// ratio = 2*M / T, where T is the total length of both strings and M the number of matched
// characters: take the longest common block (earliest in `a`, then earliest in `b` on ties),
// then recurse on the pieces to its left and to its right. This is what Python's
// difflib.SequenceMatcher(None, a, b, autojunk=False).ratio() computes on str, so characters
// are Unicode code points: UTF-8 input is decoded first ("é" is one character, not two bytes),
// and a byte that is not valid UTF-8 counts as one character of its own. Two empty strings
// have ratio 1.
//
// Cost is O(|a|*|b|) per level of recursion in the worst case; callers bound the lengths.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace allot::rewards {

// The code points of UTF-8 `text`; an invalid byte becomes 0x110000 + its value (no code point
// has that value, so it matches only the same invalid byte).
std::u32string DecodeCodePoints(std::string_view text);

// Number of matched characters M.
size_t GestaltMatches(std::u32string_view a, std::u32string_view b);
size_t GestaltMatches(std::string_view a, std::string_view b);  // UTF-8
// 2*M / (|a| + |b|), in [0, 1].
double GestaltSimilarity(std::u32string_view a, std::u32string_view b);
double GestaltSimilarity(std::string_view a, std::string_view b);  // UTF-8

}  // namespace allot::rewards
