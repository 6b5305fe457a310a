#include "rewards/math_expr.h"

#include <ginac/ginac.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <sstream>
#include <vector>

#include "math/expr_parser.h"
#include "math/ginac_eval.h"

namespace allot::rewards {
namespace {

using GiNaC::ex;
using GiNaC::numeric;

// An answer parsed by the one front-end onto GiNaC (math/expr_parser.h, LaTeX dialect).
struct ParsedMath {
  ex value;
  bool inexact = false;  // a decimal with a fractional part was read
};

math::EvalLimits AnswerLimits(const MathLimits& limits) {
  math::EvalLimits out;
  out.parse.dialect = math::ExprDialect::kLatex;
  out.parse.max_length = limits.max_length;
  out.parse.max_depth = limits.max_depth;
  out.parse.max_number_digits = limits.max_digits;
  out.max_result_bits = static_cast<int>(std::min<int64_t>(limits.max_numeric_bits, 1 << 30));
  out.max_symbolic_exponent =
      static_cast<int>(std::min<int64_t>(limits.max_symbolic_exponent, 1 << 30));
  out.max_factorial = 1000;
  out.max_symbols = 64;
  out.max_exp_argument = 0;  // compared in double precision, where exp saturates to inf
  out.named_constants = false;
  return out;
}

Result<ParsedMath> ParseAnswer(std::string_view text, const MathLimits& limits,
                               math::SymbolTable& symbols) {
  const math::EvalLimits eval = AnswerLimits(limits);
  auto tree = math::ParseExpression(text, eval.parse);
  Result<ex> value = tree.ok() ? math::ToGinac(**tree, &symbols, eval) : Result<ex>(tree.status());
  if (!value.ok()) {
    return Status(value.status().code(),
                  "maths '" + std::string(text.substr(0, 80)) + "': " + value.status().message());
  }
  return ParsedMath{*value, math::HasDecimalLiteral(**tree)};
}

std::vector<GiNaC::symbol> AllSymbols(const math::SymbolTable& symbols) {
  std::vector<GiNaC::symbol> out;
  for (const auto& [name, s] : symbols.symbols()) out.push_back(s);
  return out;
}

bool HasSymbols(const ex& e) {
  for (auto it = e.preorder_begin(); it != e.preorder_end(); ++it) {
    if (GiNaC::is_a<GiNaC::symbol>(*it)) return true;
  }
  return false;
}

// Estimated number of terms after expand(): sums add, products multiply, (sum of k)^n gives
// C(n+k-1, k-1). Saturates at 1e18.
double ExpansionSize(const ex& e) {
  constexpr double kCap = 1e18;
  if (GiNaC::is_a<GiNaC::add>(e)) {
    double s = 0;
    for (size_t i = 0; i < e.nops(); ++i) s = std::min(kCap, s + ExpansionSize(e.op(i)));
    return s;
  }
  if (GiNaC::is_a<GiNaC::mul>(e)) {
    double s = 1;
    for (size_t i = 0; i < e.nops(); ++i) s = std::min(kCap, s * ExpansionSize(e.op(i)));
    return s;
  }
  if (GiNaC::is_a<GiNaC::power>(e)) {
    double k = ExpansionSize(e.op(0));
    if (GiNaC::is_a<numeric>(e.op(1)) && GiNaC::ex_to<numeric>(e.op(1)).is_integer()) {
      double n = std::abs(GiNaC::ex_to<numeric>(e.op(1)).to_double());
      if (k <= 1) return 1;
      double log_c = std::lgamma(n + k) - std::lgamma(n + 1) - std::lgamma(k);
      return log_c > std::log(kCap) ? kCap : std::exp(log_c);
    }
    return k;
  }
  double s = 1;
  for (size_t i = 0; i < e.nops(); ++i) s = std::max(s, ExpansionSize(e.op(i)));
  return s;
}

// The value of `e` in double precision with symbols taken from `point`, or nullopt when it is
// not a finite real number. Evaluated by hand rather than by GiNaC's evalf()/subs(): those
// compute in arbitrary precision, and exp(10^15) or x^(10^15) at a point would try to allocate
// an integer of that size. Doubles saturate to inf instead, which is refused here.
std::optional<double> ToDouble(const ex& e, const std::map<ex, double, GiNaC::ex_is_less>& point,
                               int depth = 0) {
  if (depth > 256) return std::nullopt;
  double v = 0;
  if (GiNaC::is_a<numeric>(e)) {
    const numeric& n = GiNaC::ex_to<numeric>(e);
    if (!n.is_real()) return std::nullopt;
    v = n.to_double();
  } else if (GiNaC::is_a<GiNaC::symbol>(e)) {
    auto it = point.find(e);
    if (it == point.end()) return std::nullopt;
    v = it->second;
  } else if (GiNaC::is_a<GiNaC::constant>(e)) {
    if (!e.is_equal(GiNaC::Pi)) return std::nullopt;
    v = M_PI;
  } else if (GiNaC::is_a<GiNaC::add>(e) || GiNaC::is_a<GiNaC::mul>(e)) {
    const bool add = GiNaC::is_a<GiNaC::add>(e);
    v = add ? 0.0 : 1.0;
    for (size_t i = 0; i < e.nops(); ++i) {
      std::optional<double> x = ToDouble(e.op(i), point, depth + 1);
      if (!x) return std::nullopt;
      v = add ? v + *x : v * *x;
    }
  } else if (GiNaC::is_a<GiNaC::power>(e)) {
    std::optional<double> b = ToDouble(e.op(0), point, depth + 1);
    std::optional<double> k = ToDouble(e.op(1), point, depth + 1);
    if (!b || !k) return std::nullopt;
    v = std::pow(*b, *k);
  } else if (GiNaC::is_a<GiNaC::function>(e) && e.nops() == 1) {
    std::optional<double> x = ToDouble(e.op(0), point, depth + 1);
    if (!x) return std::nullopt;
    const std::string name = GiNaC::ex_to<GiNaC::function>(e).get_name();
    if (name == "sin")
      v = std::sin(*x);
    else if (name == "cos")
      v = std::cos(*x);
    else if (name == "tan")
      v = std::tan(*x);
    else if (name == "exp")
      v = std::exp(*x);
    else if (name == "log")
      v = std::log(*x);
    else if (name == "abs")
      v = std::abs(*x);
    else if (name == "factorial")
      v = std::tgamma(*x + 1);
    else
      return std::nullopt;
  } else {
    return std::nullopt;
  }
  if (!std::isfinite(v)) return std::nullopt;
  return v;
}

bool Close(double a, double b, double rel_tol) {
  double diff = std::abs(a - b);
  double scale = std::max(std::abs(a), std::abs(b));
  return diff <= rel_tol * scale || diff <= 1e-12;
}

// Evaluates both sides with every symbol set to fixed, unremarkable values. Equal when at least
// two points evaluate and all agree.
bool EqualAtPoints(const ex& a, const ex& b, const std::vector<GiNaC::symbol>& syms,
                   double rel_tol) {
  static constexpr double kPoints[3][4] = {{0.5772156649, 1.3247179572, 0.3183098862, 2.1784},
                                           {1.6180339887, -0.7320508076, 2.7182818285, 0.4142},
                                           {-1.2020569032, 0.9159655942, 1.4142135624, -3.1}};
  int agreed = 0;
  for (const auto& point : kPoints) {
    std::map<ex, double, GiNaC::ex_is_less> m;
    for (size_t i = 0; i < syms.size(); ++i) {
      m[syms[i]] = point[i % 4] + 0.1 * static_cast<double>(i / 4);
    }
    std::optional<double> va = ToDouble(a, m), vb = ToDouble(b, m);
    if (!va || !vb) continue;  // a pole, a complex value, or an overflow at this point
    if (!Close(*va, *vb, rel_tol)) return false;
    ++agreed;
  }
  return agreed >= 2;
}

}  // namespace

Result<std::string> CanonicalMath(std::string_view text, const MathLimits& limits) {
  auto lock = math::LockGinac();  // first: every GiNaC object here dies before it
  math::SymbolTable symbols;
  ALLOT_ASSIGN_OR_RETURN(ParsedMath p, ParseAnswer(text, limits, symbols));
  std::ostringstream os;
  try {
    os << p.value;
  } catch (const std::exception& e) {
    return Internal(std::string("printing maths: ") + e.what());
  }
  return os.str();
}

Result<bool> MathEqual(std::string_view a, std::string_view b, const MathCompareOptions& options) {
  auto lock = math::LockGinac();  // first: every GiNaC object here dies before it
  math::SymbolTable symbols;      // shared, so that x on both sides is one symbol
  ALLOT_ASSIGN_OR_RETURN(ParsedMath pa, ParseAnswer(a, options.limits, symbols));
  ALLOT_ASSIGN_OR_RETURN(ParsedMath pb, ParseAnswer(b, options.limits, symbols));
  try {
    ex diff = pa.value - pb.value;
    if (diff.is_zero()) return true;
    const bool symbolic = HasSymbols(pa.value) || HasSymbols(pb.value);
    if (!symbolic) {
      if (GiNaC::is_a<numeric>(pa.value) && GiNaC::is_a<numeric>(pb.value) &&
          GiNaC::ex_to<numeric>(pa.value).is_rational() &&
          GiNaC::ex_to<numeric>(pb.value).is_rational() && !pa.inexact && !pb.inexact) {
        return false;  // two exact rationals that differ
      }
      const std::map<ex, double, GiNaC::ex_is_less> none;
      std::optional<double> va = ToDouble(pa.value, none), vb = ToDouble(pb.value, none);
      if (!va || !vb) return false;
      return Close(*va, *vb, options.rel_tol);
    }
    if (ExpansionSize(diff) <= options.limits.max_expansion_terms) {
      if (diff.expand().is_zero() || diff.normal().is_zero()) return true;
    }
    const double tol = pa.inexact || pb.inexact ? std::max(options.rel_tol, 1e-9) : 1e-9;
    return EqualAtPoints(pa.value, pb.value, AllSymbols(symbols), tol);
  } catch (const std::exception& e) {
    return InvalidArgument("comparing '" + std::string(a.substr(0, 80)) + "' with '" +
                           std::string(b.substr(0, 80)) + "': " + e.what());
  }
}

}  // namespace allot::rewards