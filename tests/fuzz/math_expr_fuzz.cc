// libFuzzer target: the one expression front-end onto GiNaC (parser and exact evaluator) must
// never crash, hang or throw on any input, in either dialect; every failure is a Status.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "math/expr_parser.h"
#include "math/ginac_eval.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto tree = allot::math::ParseExpression(text);
  if (tree.ok()) (void)allot::math::ExprToString(**tree);
  // The calculator dialect, as the RSTKit calculator reads it (closed expressions: no symbols),
  // and with free names, as the symbolic tools do.
  auto closed = allot::math::ParseToGinac(text, nullptr, {});
  if (closed.ok()) (void)allot::math::GinacToDecimal(*closed);
  allot::math::SymbolTable symbols;
  auto symbolic = allot::math::ParseToGinac(text, &symbols, {});
  if (symbolic.ok()) (void)allot::math::EstimateExpandedTerms(*symbolic);
  // The LaTeX dialect, as rewards/math_expr.cc reads answers.
  allot::math::EvalLimits latex;
  latex.parse.dialect = allot::math::ExprDialect::kLatex;
  latex.named_constants = false;
  latex.max_exp_argument = 0;
  allot::math::SymbolTable answer_symbols;
  auto answer = allot::math::ParseToGinac(text, &answer_symbols, latex);
  if (answer.ok()) (void)allot::math::GinacToString(*answer);
  return 0;
}
