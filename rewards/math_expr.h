// Bounded LaTeX-to-GiNaC parsing and symbolic equality of two answers.
//
// Answers are read by allot's one front-end onto GiNaC (math/expr_parser.h and
// ginac_eval.h) in its LaTeX dialect, which reads the subset of LaTeX and plain-text maths
// that final answers use:
//   numbers (exact: "0.5" is the rational 1/2), + - * / ^, implicit products ("2x", "3\pi",
//   "2(x+1)"), \frac \dfrac \tfrac (also "\frac12"), \sqrt{x}, \sqrt[n]{x}, \cdot \times \div,
//   \pi, \sin \cos \tan \cot \sec \csc \ln \log \log_b \exp (with or without an argument in
//   braces or parentheses), n! for small n, and (..) {..} [..] as grouping.
// Letters are symbols; a run of letters is their product ("xy" = x*y) except for the function
// names above. `e` is a symbol, not Euler's number; `i` is a symbol, not the imaginary unit.
// `^` followed by a bare number takes the whole number ("2^10" = 1024), as in plain text.
// Also read: "**" for powers, the Unicode operators × ÷ − ·, and n! of a symbol (kept as
// factorial(n)).
//
// Not supported (the parse fails with InvalidArgument, and the caller falls back to string
// comparison): \infty, \pm, relations other than a single "=", matrices, integrals, sums,
// limits, set-builder notation, units that are not stripped by the normaliser, and degrees vs
// radians (90^\circ is 90, never \pi/2).
//
// Every parse is bounded: input length, nesting depth, digits per number, the size of an
// integer power of a number (in bits) and of a symbolic base. Poles (division by zero, log 0,
// 0^0) are refused before GiNaC sees them, and GiNaC's own exceptions are caught. Expansion is
// only attempted when the estimated number of expanded terms is small; otherwise, and for
// identities GiNaC does not simplify (sin^2 + cos^2), equality is decided by evaluating both
// sides in double precision at fixed points (never with GiNaC's arbitrary-precision evalf,
// which exp(10^15) would exhaust). Irrational constants therefore compare to about 1e-15.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace allot::rewards {

struct MathLimits {
  size_t max_length = 1024;             // characters of one side, after normalisation
  int max_depth = 48;                   // nesting of groups, fractions and powers
  int max_digits = 128;                 // digits of one number literal
  int64_t max_numeric_bits = 1 << 15;   // |n^k| must fit in this many bits (~9,900 digits)
  int64_t max_symbolic_exponent = 256;  // |k| in (expr)^k when expr has symbols
  double max_expansion_terms = 4000.0;  // estimated terms before expand()/normal() is skipped
};

// Relative tolerance for comparing values that are not both exact rationals (decimals,
// irrational constants). Exact rationals ("1/2", "0.50", "\frac{2}{4}") compare exactly.
struct MathCompareOptions {
  MathLimits limits;
  double rel_tol = 1e-6;
};

// GiNaC's printed form of the parsed expression ("1/2", "2*sqrt(2)", "1+x^2"): for grade
// reports and debugging. Errors: InvalidArgument (unparseable or unsupported),
// ResourceExhausted (a limit was hit).
Result<std::string> CanonicalMath(std::string_view text, const MathLimits& limits = {});

// Whether two maths expressions are equal: exactly for rationals, within rel_tol for other
// constants, by expand+normal of the difference or by evaluation at fixed points for
// expressions with symbols. Errors as for CanonicalMath, for either side.
Result<bool> MathEqual(std::string_view a, std::string_view b,
                       const MathCompareOptions& options = {});

}  // namespace allot::rewards
