// The RSTKit "Multi-functional Calculator Toolkit" (CogER App. D.2, Table 8): basic
// arithmetic, symbolic computation (GiNaC in place of the paper's SymPy) and statistics.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"
#include "math/ginac_eval.h"
#include "tools/tool_registry.h"

namespace allot::tools {

struct Calculation {
  std::string exact;      // "1/2", "2*sqrt(2)", "120"
  std::string decimal;    // "0.5", "2.82842712474619", "120"
  bool rational = false;  // exact is a rational number
};

// Evaluates a closed arithmetic expression ("5^3 - 9*(5)^2 + 23*5 - 21"). Free names are an
// error; pathological input (huge exponents, deep nesting, long input) is refused.
Result<Calculation> Calculate(std::string_view expression, const math::EvalLimits& limits = {});

// calculate, gcd, lcm, factorial, combinations, permutations, prime_factorization, percentage.
Status RegisterArithmeticTools(ToolRegistry& registry, const math::EvalLimits& limits = {});

// describe_data, quantile, linear_regression, correlation, probability_distribution.
Status RegisterStatisticsTools(ToolRegistry& registry);

// simplify, expand, factor, solve, differentiate, integrate, series, limit, substitute,
// matrix_determinant, matrix_inverse, matrix_multiply, matrix_eigenvalues.
Status RegisterSymbolicTools(ToolRegistry& registry, const math::EvalLimits& limits = {});

}  // namespace allot::tools
