// A bounded recursive-descent parser for maths written by an LLM: allot's one front-end onto
// GiNaC (math/ginac_eval.h evaluates the tree).
//
// Two dialects share the grammar below and the AST:
//  - kCalculator: the calculator tools of RSTKit (CogER App. D.2, "Basic Arithmetic" and
//    "Symbolic Computation"). Names are whole words ("abc", "x1"), "1e-3" is scientific
//    notation, '%' is modulo, '[a, b]' a list, one '=' makes an equation.
//  - kLatex: final answers (rewards/math_expr.h), the LaTeX and plain-text subset answers use.
//    A run of letters is a product of one-letter symbols ("xy" = x*y) unless it is a function
//    name or "pi"; x_1 and x_{10} are names; \frac{a}{b} (also \frac12, \dfrac, \tfrac),
//    \sqrt{x}, \sqrt[n]{x}, \cdot \times \div, \pi, Greek letters as symbols; (..) [..] {..}
//    all group; \sin^2 x, \log_b x and functions applied without parentheses ("\sin x",
//    "ln 2"). No '=', '%', lists or scientific notation ("2e" is 2*e).
// Input is parsed into the AST, never handed to an interpreter.
//
// Grammar (lowest precedence first):
//   equation := sum ('=' sum)?                         kCalculator only
//   sum      := product (('+' | '-') product)*
//   product  := unary (('*' | '/' | '%') unary | <implicit *> power)*
//   unary    := ('-' | '+') unary | power
//   power    := postfix (('^' | '**') (unary | '{' equation '}'))?  right-assoc.; -2^2 = -4
//   postfix  := primary '!'*
//   primary  := number | name | name '(' args ')' | '(' equation ')' | '[' args ']'
//             | kLatex: '[' equation ']' | '{' equation '}' | \frac arg arg
//             | \sqrt ('[' equation ']')? arg | function ('^' arg)? ('_' arg)? operand
// Implicit multiplication ("2x", "9(5)^2", "(a+b)(a-b)") binds like '*'.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace allot::math {

struct ExprNode {
  enum class Kind {
    kNumber,     // text holds the literal ("12", "0.5", "1e-3")
    kName,       // a constant or symbol ("pi", "x")
    kCall,       // text holds the function name; args the arguments
    kBinary,     // op is one of + - * / % ^ =
    kNegate,     // args[0]
    kFactorial,  // args[0]
    kList,       // "[a, b, c]": vectors and matrix rows
  };
  Kind kind = Kind::kNumber;
  char op = 0;
  std::string text;
  std::vector<std::unique_ptr<ExprNode>> args;
};

enum class ExprDialect { kCalculator, kLatex };

struct ExprLimits {
  size_t max_length = 4096;     // characters of input
  int max_depth = 64;           // nesting of parentheses, calls and operators
  int max_nodes = 4096;         // AST size
  int max_number_digits = 400;  // digits in one literal, exponent included
  ExprDialect dialect = ExprDialect::kCalculator;
};

// Parses `text`; errors name the character offset ("at 7: expected ')'"). Malformed input is
// InvalidArgument, input beyond a limit ResourceExhausted.
Result<std::unique_ptr<ExprNode>> ParseExpression(std::string_view text,
                                                  const ExprLimits& limits = {});

// Whether a number literal of the tree has a fractional part ("0.5", "2.0"): answers written
// with decimals are compared with a tolerance (rewards/math_expr.h).
bool HasDecimalLiteral(const ExprNode& node);

// Prints the tree back in a canonical, fully parenthesised form (for tests and debugging).
std::string ExprToString(const ExprNode& node);

}  // namespace allot::math
