// Turns a parsed expression (math/expr_parser.h) into a GiNaC expression, bounding the
// work GiNaC would otherwise do eagerly (2^(10^9), 100000!, (x+y)^5000).
//
// Numbers stay exact: "0.1" is the rational 1/10, "1e-3" is 1/1000. Functions that have no
// exact value (sin(1), log(3)) stay symbolic until the caller asks for a decimal.
#pragma once

#include <ginac/ginac.h>

#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "core/status.h"
#include "math/expr_parser.h"

namespace allot::math {

// GiNaC and CLN are not thread-safe: expression nodes, including the library's global
// constants (0, 1, -1, ...) that every expression shares, carry plain non-atomic reference
// counts, and functions keep global caches. Two threads using GiNaC at once corrupt those
// counts, and a shared node is freed while still in use (a rollout worker grading answers or
// running the calculator on several episode threads crashed that way). Every GiNaC object of
// the process must therefore be created, copied, used and destroyed while this lock is held.
// The entry points that keep no GiNaC object past their return take it themselves
// (rewards::MathEqual and CanonicalMath, Calculate, the arithmetic and symbolic tools);
// everything else in this header expects the caller to hold it for as long as its results
// live. Recursive: an entry point may call another.
[[nodiscard]] std::unique_lock<std::recursive_mutex> LockGinac();

struct EvalLimits {
  ExprLimits parse;
  int max_result_bits = 65536;     // size of any exact intermediate number
  int max_symbolic_exponent = 64;  // |n| in (non-number)^n
  int max_factorial = 5000;        // n in n!, comb(n, k), perm(n, k)
  int max_symbols = 16;            // distinct free symbols
  int max_expand_terms = 20000;    // upper bound on terms produced by expand/normal/factor
  double max_exp_argument = 1e5;   // |x| in exp(x) for a real number x; 0 = no bound
  // e and E are Euler's number, i and I the imaginary unit (the calculator). Off for answers
  // (ExprDialect::kLatex), where they are symbols like any other letter. pi is always pi.
  bool named_constants = true;
};

// Free symbols by name, so that "x" means the same GiNaC symbol across several expressions.
class SymbolTable {
 public:
  // Returns the symbol for `name`, creating it; fails past `max_symbols`.
  Result<GiNaC::symbol> Get(const std::string& name, int max_symbols);
  const std::map<std::string, GiNaC::symbol>& symbols() const { return symbols_; }
  GiNaC::lst AsList() const;

 private:
  std::map<std::string, GiNaC::symbol> symbols_;
};

// Evaluates `node`. With `symbols` null, any free name is an error (the arithmetic tool).
// Equations ("a = b") become GiNaC relationals; lists become GiNaC lst (rows of a matrix).
// Poles (division by zero, log 0, 0^0, 0^-k) are refused before GiNaC sees them: GiNaC throws
// from inside its evaluation there and leaks the half-built node. Errors: InvalidArgument for
// input that has no value, ResourceExhausted for a limit.
Result<GiNaC::ex> ToGinac(const ExprNode& node, SymbolTable* symbols, const EvalLimits& limits);

// Parses and evaluates in one step, catching every GiNaC/CLN exception.
Result<GiNaC::ex> ParseToGinac(std::string_view text, SymbolTable* symbols,
                               const EvalLimits& limits);

// base^(1/q) for q = 2 or 3 with perfect powers pulled out of an exact rational base:
// sqrt(8) -> 2*sqrt(2), sqrt(1/2) -> 1/2*sqrt(2). Other bases are left to GiNaC.
GiNaC::ex SimplifiedRoot(const GiNaC::ex& base, int q);

// An upper bound on the number of terms expand() would produce; used to refuse blow-ups.
double EstimateExpandedTerms(const GiNaC::ex& e);

// "3/10", "2*sqrt(2)", "x^2+1": GiNaC's own notation with "^" for powers.
std::string GinacToString(const GiNaC::ex& e);

// A decimal for a numeric-valued expression ("0.3", "1.4142135623731"), or an error when the
// expression still has free symbols or is not a finite number.
Result<std::string> GinacToDecimal(const GiNaC::ex& e, int significant_digits = 15);

}  // namespace allot::math
