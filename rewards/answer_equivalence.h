// Answer equivalence: is an extracted answer the same as the reference answer?
//
// The check runs in stages and stops at the first that decides:
//   1. the raw strings are equal;
//   2. the normalised strings are equal (NormalizeAnswer, answer_normalizer.h);
//   3. relations: "x \in S" is S; an inequality in one variable is its interval
//      ("-1 \le x < 3" is "[-1, 3)", "x < -1 or x > 3" a union), and two inequalities in
//      different variables differ; a labelled answer ("x = 3", "f(x) = 1", "(p, q) = (3, 2)")
//      against a bare value is its right-hand side; two equations with the same left-hand side
//      compare their right-hand sides;
//   4. structures: tuples "(1,2)" and intervals "[1,2)" compare element by element with the
//      same brackets, and so does a bare list against a tuple ("3, 2" is the pair (3, 2));
//      sets "\{1,2\}", unions "A \cup B", bare lists "1, 2" or "x = 1 or x = 2", and
//      "a \pm b" (the set {a+b, a-b}) compare as multisets;
//   5. equations: two with different left-hand sides compare lhs - rhs up to sign; an equation
//      that is not labelled ("2x = 6") never equals a value; plain words compare
//      case-insensitively ("Monday" vs "monday"), and text with words ("5 apples and 3") is
//      never read as a product of symbols;
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
