// libFuzzer target: the calculator's expression parser and exact evaluator must never crash,
// hang or throw on any input; every failure is a Status.
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
  return 0;
}
