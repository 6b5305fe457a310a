// RLoT's state: the LLM's 7-aspect self-evaluation of the newest reasoning step (RLoT Sec. 3.1,
// Table 2): A1 A2 A3 (correctness), B1 B2 (complexity), C1 C2 (completeness). Each is scored
// 1 = False, 2 = Unsure, 3 = True, or 0 = not involved, written as `A1 score=[SCORE] ...`.
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "envs/rlot/logic_block.h"

namespace allot::envs::rlot {

using State = std::array<float, kStateDim>;

inline constexpr std::array<const char*, kStateDim> kAspectKeys = {"A1", "A2", "A3", "B1",
                                                                   "B2", "C1", "C2"};

struct ParsedEvaluation {
  State state{};
  int found = 0;  // keys that carried a score; the others are 0
};

// Reads each key's score with its own pattern, as the reference parser does
// (`KEY[:=\[a-zA-Z \n]*(0|1|2|3)`, notes.md): the key, then letters, spaces, newlines, ':',
// '=' or '[', then the digit. A key that is missing or carries no score counts as 0. The
// first match of a key wins. Bounded: only the first `max_chars` characters are read.
ParsedEvaluation ParseSelfEvaluation(std::string_view text, size_t max_chars = 16384);

}  // namespace allot::envs::rlot
