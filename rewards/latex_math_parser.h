// The LaTeX/plain-text maths parser behind math_expr.h: text to a GiNaC expression, within
// MathLimits. Internal to rewards/ (it exposes GiNaC types); see math_expr.h for the grammar
// and what is not supported.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <ginac/ginac.h>

#include "core/status.h"
#include "rewards/math_expr.h"

namespace allot::rewards {

// Symbols by name, shared by both sides of a comparison so that x is one symbol (GiNaC symbols
// with equal names are distinct objects).
class MathSymbols {
 public:
  GiNaC::ex Get(const std::string& name) {
    auto it = symbols_.find(name);
    if (it == symbols_.end()) it = symbols_.emplace(name, GiNaC::symbol(name)).first;
    return it->second;
  }
  std::vector<GiNaC::symbol> All() const {
    std::vector<GiNaC::symbol> out;
    for (const auto& [name, s] : symbols_) out.push_back(s);
    return out;
  }

 private:
  std::map<std::string, GiNaC::symbol> symbols_;
};

struct ParsedMath {
  GiNaC::ex value;
  bool inexact = false;  // a decimal with a fractional part was read
};

// InvalidArgument for unparseable or unsupported input, ResourceExhausted for a limit.
Result<ParsedMath> ParseLatexMath(std::string_view text, const MathLimits& limits,
                                  MathSymbols& symbols);

}  // namespace allot::rewards
