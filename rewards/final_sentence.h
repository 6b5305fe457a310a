// Reading the final answer of prose that has no marker (no box, no "####", no "the answer
// is"), as math_verify reads it: from the end, and only where the text states one result.
// Used by answer_extractor.h's kBoxed format; linear in the length of the text.
#pragma once

#include <string_view>

#include "rewards/answer_extractor.h"

namespace allot::rewards {

// Prose without a marker, read as math_verify reads it, from its end: a last line that is one
// number or one piece of maths; else the last sentence's last inline maths, when the sentence
// states it ("the probability is $\frac16$", "Therefore $(x, y) = (3, 2)$": the part after
// the last "="); else the one number after the sentence's last "is", "=", "gets", "has"...
// ("So she has 14 apples in total"). Two numbers there ("5 apples and 3 pears"), or no such
// verb ("I am not sure about 18"), is no answer.
ExtractedAnswer ExtractFinalSentence(std::string_view text);

// Prose rather than a direct answer: two or more words of three or more letters outside maths
// and LaTeX commands ("So she has 14 apples", not "x = 2 \text{ or } 5" or "5 apples").
bool LooksLikeProse(std::string_view text);

}  // namespace allot::rewards
