// libFuzzer target: the one expression front-end onto GiNaC (parser and exact evaluator) must
// never crash, hang or throw on any input, in either dialect; every failure is a Status.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "envs/tools/calculator_tools.h"
#include "envs/tools/expr_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto tree = allot::envs::tools::ParseExpression(text);
  if (tree.ok()) (void)allot::envs::tools::ExprToString(**tree);
  (void)allot::envs::tools::Calculate(text);
  allot::envs::tools::SymbolTable symbols;
  auto symbolic = allot::envs::tools::ParseToGinac(text, &symbols, {});
  if (symbolic.ok()) (void)allot::envs::tools::EstimateExpandedTerms(*symbolic);
  // The LaTeX dialect, as rewards/math_expr.cc reads answers.
  allot::envs::tools::EvalLimits latex;
  latex.parse.dialect = allot::envs::tools::ExprDialect::kLatex;
  latex.named_constants = false;
  latex.max_exp_argument = 0;
  allot::envs::tools::SymbolTable answer_symbols;
  auto answer = allot::envs::tools::ParseToGinac(text, &answer_symbols, latex);
  if (answer.ok()) (void)allot::envs::tools::GinacToString(*answer);
  return 0;
}
