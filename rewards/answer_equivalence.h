// Answer equivalence: is an extracted answer the same as the reference answer?
//
// The check runs in stages and stops at the first that decides:
//   1. the raw strings are equal;
//   2. the normalised strings are equal (NormalizeAnswer, answer_normalizer.h);
//   3. structures: tuples "(1,2)" and intervals "[1,2)" compare element by element with the
//      same brackets, sets "\{1,2\}", unions "A \cup B" and bare lists "1, 2" compare as
//      multisets;
//   4. equations: "x=3" vs "3" drops a variable on the left; two equations compare their
//      right-hand sides when the left-hand sides agree, else lhs - rhs up to sign;
//   5. plain words compare case-insensitively ("Monday" vs "monday");
//   6. maths through GiNaC (math_expr.h): exact for rationals, relative tolerance otherwise,
//      symbolic difference for expressions. A percentage on one side only also matches its
//      value over 100 ("10\%" matches both "10" and "0.1").
// Inputs longer than EquivalenceOptions::max_input_chars are never equivalent (and are not
// parsed). Nothing here throws or crashes on hostile input; see math_expr.h for the limits.
#pragma once

#include <string>
#include <string_view>

#include "rewards/answer_normalizer.h"
#include "rewards/math_expr.h"

namespace allot::rewards {

struct EquivalenceOptions {
  MathCompareOptions math;
  size_t max_input_chars = 8192;   // longer answers are not equivalent to anything
  int max_elements = 64;           // of a tuple, set or list
  int max_math_comparisons = 256;  // GiNaC comparisons per call (unordered sets are quadratic)
};

struct EquivalenceResult {
  bool equivalent = false;
  std::string reason;  // the stage that decided: "exact", "normalized", "numeric", ...
};

EquivalenceResult AnswersEquivalent(std::string_view pred, std::string_view gold,
                                    const EquivalenceOptions& options = {});

// Exact match as the QA papers report it (SQuAD normalisation): lower case, punctuation and
// the articles a/an/the removed, whitespace collapsed; then string equality.
bool ExactMatch(std::string_view pred, std::string_view gold);
std::string SquadNormalize(std::string_view text);

}  // namespace allot::rewards
