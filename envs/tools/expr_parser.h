// A bounded recursive-descent parser for calculator and symbolic-tool input.
//
// The calculator tools of RSTKit (CogER App. D.2, "Basic Arithmetic" and "Symbolic
// Computation") take expressions written by an LLM. They are parsed here into a small AST,
// never handed to an interpreter. One parser serves both tools: arithmetic evaluates the tree
// to exact numbers (envs/tools/ginac_eval.h), symbolic to GiNaC expressions.
//
// Grammar (lowest precedence first):
//   equation := sum ('=' sum)?
//   sum      := product (('+' | '-') product)*
//   product  := unary (('*' | '/' | '%') unary | <implicit *> power)*
//   unary    := ('-' | '+') unary | power
//   power    := postfix (('^' | '**') unary)?          right-associative; -2^2 = -4
//   postfix  := primary '!'*
//   primary  := number | name | name '(' args ')' | '(' equation ')' | '[' args ']'
// Implicit multiplication ("2x", "9(5)^2", "(a+b)(a-b)") binds like '*'.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace allot::envs::tools {

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

struct ExprLimits {
  size_t max_length = 4096;     // characters of input
  int max_depth = 64;           // nesting of parentheses, calls and operators
  int max_nodes = 4096;         // AST size
  int max_number_digits = 400;  // digits in one literal, exponent included
};

// Parses `text`; errors name the character offset ("at 7: expected ')'").
Result<std::unique_ptr<ExprNode>> ParseExpression(std::string_view text,
                                                  const ExprLimits& limits = {});

// Prints the tree back in a canonical, fully parenthesised form (for tests and debugging).
std::string ExprToString(const ExprNode& node);

}  // namespace allot::envs::tools
