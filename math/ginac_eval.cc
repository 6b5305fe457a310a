#include "math/ginac_eval.h"

#include <cmath>
#include <cstdio>
#include <exception>
#include <functional>
#include <sstream>
#include <unordered_map>
#include <vector>

namespace allot::math {

std::unique_lock<std::recursive_mutex> LockGinac() {
  static std::recursive_mutex* mu = new std::recursive_mutex();  // never destroyed
  return std::unique_lock<std::recursive_mutex>(*mu);
}

namespace {

using GiNaC::ex;
using GiNaC::numeric;

bool IsExactRational(const ex& e) {
  return GiNaC::is_a<numeric>(e) && GiNaC::ex_to<numeric>(e).is_rational();
}

bool IsExactInteger(const ex& e) {
  return GiNaC::is_a<numeric>(e) && GiNaC::ex_to<numeric>(e).is_integer();
}

// Bits needed to write a rational: numerator plus denominator.
long RationalBits(const numeric& q) { return q.numer().int_length() + q.denom().int_length(); }

// Literal "12.5e-3" as the exact rational 125/10000.
Result<ex> NumberLiteral(const std::string& text) {
  std::string digits;
  long scale = 0;  // value = digits * 10^scale
  size_t i = 0;
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i)
    digits += text[i];
  if (i < text.size() && text[i] == '.') {
    for (++i; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
      digits += text[i];
      --scale;
    }
  }
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    bool neg = false;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) neg = text[i++] == '-';
    long exp10 = 0;
    for (; i < text.size(); ++i) {
      exp10 = exp10 * 10 + (text[i] - '0');
      if (exp10 > 100000) return InvalidArgument("number literal exponent too large: " + text);
    }
    scale += neg ? -exp10 : exp10;
  }
  if (digits.empty()) digits = "0";
  if (scale > 1000 || scale < -1000) {
    return InvalidArgument("number literal out of range: " + text);
  }
  const numeric mantissa(digits.c_str());
  const numeric ten_pow = GiNaC::pow(numeric(10), numeric(scale < 0 ? -scale : scale));
  return ex(scale < 0 ? mantissa / ten_pow : mantissa * ten_pow);
}

// Python-style floor for exact rationals.
numeric FloorRational(const numeric& q) {
  numeric fl = GiNaC::iquo(q.numer(), q.denom());
  if (q.is_negative() && fl * q.denom() != q.numer()) fl -= 1;
  return fl;
}

Result<double> ToRealDouble(const ex& e, const char* what) {
  const ex v = e.evalf();
  if (!GiNaC::is_a<numeric>(v) || !GiNaC::ex_to<numeric>(v).is_real()) {
    return InvalidArgument(std::string(what) + " needs a real number, got " + GinacToString(e));
  }
  return GiNaC::ex_to<numeric>(v).to_double();
}

// Pulls k^q factors (k < 10^4) out of a positive integer.
void ExtractPowers(numeric& n, numeric& out, int q) {
  for (long k = 2; k < 10000; ++k) {
    const numeric kq = GiNaC::pow(numeric(k), numeric(q));
    if (kq > n) break;
    while (GiNaC::irem(n, kq).is_zero()) {
      n = n / kq;
      out *= k;
    }
  }
}

class Evaluator {
 public:
  Evaluator(SymbolTable* symbols, const EvalLimits& limits) : symbols_(symbols), limits_(limits) {}

  Result<ex> Eval(const ExprNode& n, bool top = true) {
    switch (n.kind) {
      case ExprNode::Kind::kNumber:
        return NumberLiteral(n.text);
      case ExprNode::Kind::kName:
        return Name(n.text);
      case ExprNode::Kind::kNegate: {
        ALLOT_ASSIGN_OR_RETURN(ex a, Eval(*n.args[0], false));
        return ex(-a);
      }
      case ExprNode::Kind::kFactorial: {
        ALLOT_ASSIGN_OR_RETURN(ex a, Eval(*n.args[0], false));
        return Factorial(a);
      }
      case ExprNode::Kind::kList: {
        GiNaC::lst items;
        for (const auto& arg : n.args) {
          ALLOT_ASSIGN_OR_RETURN(ex a, Eval(*arg, false));
          items.append(a);
        }
        return ex(items);
      }
      case ExprNode::Kind::kCall:
        return Call(n);
      case ExprNode::Kind::kBinary:
        return Binary(n, top);
    }
    return InvalidArgument("unknown expression node");
  }

 private:
  Result<ex> Name(const std::string& name) {
    if (name == "pi" || name == "Pi") return ex(GiNaC::Pi);
    if (limits_.named_constants) {
      if (name == "e" || name == "E") return ex(GiNaC::exp(ex(1)));
      if (name == "I" || name == "i") return ex(GiNaC::I);
    }
    if (symbols_ == nullptr) return InvalidArgument("unknown name '" + name + "'");
    ALLOT_ASSIGN_OR_RETURN(GiNaC::symbol s, symbols_->Get(name, limits_.max_symbols));
    return ex(s);
  }

  Status CheckSize(const ex& e) {
    if (IsExactRational(e) && RationalBits(GiNaC::ex_to<numeric>(e)) > limits_.max_result_bits) {
      return ResourceExhausted("intermediate number exceeds " +
                               std::to_string(limits_.max_result_bits) + " bits");
    }
    return Status::Ok();
  }

  Result<ex> Power(const ex& base, const ex& exponent) {
    if (base.is_zero() &&
        !(GiNaC::is_a<numeric>(exponent) && GiNaC::ex_to<numeric>(exponent).real().is_positive())) {
      if (GiNaC::is_a<numeric>(exponent) && GiNaC::ex_to<numeric>(exponent).is_negative()) {
        return InvalidArgument("division by zero (0^negative)");
      }
      return InvalidArgument("0 to a power that is not positive");
    }
    if (GiNaC::is_a<numeric>(exponent)) {
      const numeric& e = GiNaC::ex_to<numeric>(exponent);
      if (e.is_rational()) {
        const numeric magnitude = GiNaC::abs(e.numer());
        if (IsExactRational(base)) {
          const numeric& b = GiNaC::ex_to<numeric>(base);
          if (!b.is_zero() && GiNaC::abs(b) != 1) {
            const long bits = RationalBits(b);
            if (magnitude > numeric(limits_.max_result_bits) ||
                magnitude.to_long() * bits > limits_.max_result_bits) {
              return ResourceExhausted("exponent too large: result would exceed " +
                                       std::to_string(limits_.max_result_bits) + " bits");
            }
          }
        } else if (!GiNaC::is_a<numeric>(base) &&
                   magnitude > numeric(limits_.max_symbolic_exponent)) {
          return ResourceExhausted("exponent too large for a symbolic base (limit " +
                                   std::to_string(limits_.max_symbolic_exponent) + ")");
        }
      }
    }
    if (GiNaC::is_a<numeric>(exponent) && IsExactRational(base)) {
      const numeric& e = GiNaC::ex_to<numeric>(exponent);
      if (e == numeric(1, 2) || e == numeric(1, 3)) return SimplifiedRoot(base, e.denom().to_int());
    }
    ex r = GiNaC::pow(base, exponent);
    // GiNaC folds (x^a)^b, so the folded exponent is bounded as well.
    if (GiNaC::is_a<GiNaC::power>(r) && !GiNaC::is_a<numeric>(r.op(0)) &&
        GiNaC::is_a<numeric>(r.op(1)) && GiNaC::ex_to<numeric>(r.op(1)).is_rational() &&
        GiNaC::abs(GiNaC::ex_to<numeric>(r.op(1))) > numeric(limits_.max_symbolic_exponent)) {
      return ResourceExhausted("exponent too large for a symbolic base (limit " +
                               std::to_string(limits_.max_symbolic_exponent) + ")");
    }
    ALLOT_RETURN_IF_ERROR(CheckSize(r));
    return r;
  }

  Result<ex> Log(const ex& x) {
    if (x.is_zero()) return InvalidArgument("log of zero");
    return ex(GiNaC::log(x));
  }

  Result<ex> Divide(const ex& a, const ex& b) {
    if (b.is_zero()) return InvalidArgument("division by zero");
    return ex(a / b);
  }

  Result<ex> Modulo(const ex& a, const ex& b) {
    if (IsExactRational(a) && IsExactRational(b)) {
      const numeric& x = GiNaC::ex_to<numeric>(a);
      const numeric& y = GiNaC::ex_to<numeric>(b);
      if (y.is_zero()) return InvalidArgument("modulo by zero");
      return ex(x - y * FloorRational(x / y));
    }
    if (GiNaC::is_a<numeric>(a.evalf()) && GiNaC::is_a<numeric>(b.evalf())) {
      ALLOT_ASSIGN_OR_RETURN(double x, ToRealDouble(a, "%"));
      ALLOT_ASSIGN_OR_RETURN(double y, ToRealDouble(b, "%"));
      if (y == 0) return InvalidArgument("modulo by zero");
      return ex(numeric(x - y * std::floor(x / y)));
    }
    return InvalidArgument("% needs numbers, got " + GinacToString(a) + " % " + GinacToString(b));
  }

  Result<ex> Binary(const ExprNode& n, bool top) {
    if (n.op == '=' && !top) return InvalidArgument("'=' is only allowed at the top level");
    ALLOT_ASSIGN_OR_RETURN(ex a, Eval(*n.args[0], false));
    ALLOT_ASSIGN_OR_RETURN(ex b, Eval(*n.args[1], false));
    ex r;
    switch (n.op) {
      case '+':
        r = a + b;
        break;
      case '-':
        r = a - b;
        break;
      case '*':
        r = a * b;
        break;
      case '/': {
        ALLOT_ASSIGN_OR_RETURN(r, Divide(a, b));
        break;
      }
      case '%': {
        ALLOT_ASSIGN_OR_RETURN(r, Modulo(a, b));
        break;
      }
      case '^':
        return Power(a, b);
      case '=':
        if (symbols_ == nullptr) return InvalidArgument("'=' is not allowed in arithmetic");
        return ex(a == b);
      default:
        return InvalidArgument(std::string("unknown operator ") + n.op);
    }
    ALLOT_RETURN_IF_ERROR(CheckSize(r));
    return r;
  }

  Result<numeric> SmallNonNegativeInt(const ex& e, const char* what) {
    if (!IsExactInteger(e) || GiNaC::ex_to<numeric>(e).is_negative()) {
      return InvalidArgument(std::string(what) + " needs a non-negative integer, got " +
                             GinacToString(e));
    }
    const numeric& n = GiNaC::ex_to<numeric>(e);
    if (n > numeric(limits_.max_factorial)) {
      return ResourceExhausted(std::string(what) + " argument too large (limit " +
                               std::to_string(limits_.max_factorial) + ")");
    }
    return n;
  }

  Result<ex> Factorial(const ex& a) {
    if (symbols_ != nullptr && !GiNaC::is_a<numeric>(a)) return ex(GiNaC::factorial(a));
    ALLOT_ASSIGN_OR_RETURN(numeric n, SmallNonNegativeInt(a, "factorial"));
    return ex(GiNaC::factorial(n));
  }

  Result<ex> RoundLike(const ex& a, const std::string& fn) {
    if (IsExactRational(a)) {
      const numeric& q = GiNaC::ex_to<numeric>(a);
      if (fn == "floor") return ex(FloorRational(q));
      if (fn == "ceil") return ex(-FloorRational(-q));
      const numeric half(1, 2);  // round half away from zero
      return ex(q.is_negative() ? -FloorRational(-q + half) : FloorRational(q + half));
    }
    ALLOT_ASSIGN_OR_RETURN(double x, ToRealDouble(a, fn.c_str()));
    if (!std::isfinite(x) || std::fabs(x) > 1e15) {
      return OutOfRange(fn + " of a non-exact value beyond 1e15");
    }
    const double r = fn == "floor" ? std::floor(x) : fn == "ceil" ? std::ceil(x) : std::round(x);
    return ex(numeric(static_cast<long>(r)));
  }

  Result<ex> Call(const ExprNode& n) {
    const std::string& fn = n.text;
    std::vector<ex> args;
    for (const auto& arg : n.args) {
      ALLOT_ASSIGN_OR_RETURN(ex a, Eval(*arg, false));
      args.push_back(a);
    }
    auto arity = [&](size_t lo, size_t hi) -> Status {
      if (args.size() < lo || args.size() > hi) {
        return InvalidArgument(
            fn + "() takes " +
            (lo == hi ? std::to_string(lo) : std::to_string(lo) + ".." + std::to_string(hi)) +
            " argument(s), got " + std::to_string(args.size()));
      }
      return Status::Ok();
    };
    using Unary = ex (*)(const ex&);
    static const std::unordered_map<std::string, Unary> kUnary = {
        {"sin", [](const ex& x) -> ex { return GiNaC::sin(x); }},
        {"cos", [](const ex& x) -> ex { return GiNaC::cos(x); }},
        {"tan", [](const ex& x) -> ex { return GiNaC::tan(x); }},
        {"asin", [](const ex& x) -> ex { return GiNaC::asin(x); }},
        {"acos", [](const ex& x) -> ex { return GiNaC::acos(x); }},
        {"atan", [](const ex& x) -> ex { return GiNaC::atan(x); }},
        {"sinh", [](const ex& x) -> ex { return GiNaC::sinh(x); }},
        {"cosh", [](const ex& x) -> ex { return GiNaC::cosh(x); }},
        {"tanh", [](const ex& x) -> ex { return GiNaC::tanh(x); }},
        {"asinh", [](const ex& x) -> ex { return GiNaC::asinh(x); }},
        {"acosh", [](const ex& x) -> ex { return GiNaC::acosh(x); }},
        {"atanh", [](const ex& x) -> ex { return GiNaC::atanh(x); }},
        {"exp", [](const ex& x) -> ex { return GiNaC::exp(x); }},
        {"abs", [](const ex& x) -> ex { return GiNaC::abs(x); }},
    };
    if (fn == "cot" || fn == "sec" || fn == "csc") {
      ALLOT_RETURN_IF_ERROR(arity(1, 1));
      const ex& x = args[0];
      return Divide(1, fn == "cot" ? GiNaC::tan(x) : fn == "sec" ? GiNaC::cos(x) : GiNaC::sin(x));
    }
    if (auto it = kUnary.find(fn); it != kUnary.end()) {
      ALLOT_RETURN_IF_ERROR(arity(1, 1));
      if (fn == "exp" && limits_.max_exp_argument > 0 && GiNaC::is_a<numeric>(args[0].evalf()) &&
          GiNaC::ex_to<numeric>(args[0].evalf()).is_real() &&
          std::fabs(GiNaC::ex_to<numeric>(args[0].evalf()).to_double()) >
              limits_.max_exp_argument) {
        return OutOfRange("exp argument too large");
      }
      return it->second(args[0]);
    }
    if (fn == "sqrt") {
      ALLOT_RETURN_IF_ERROR(arity(1, 1));
      return Power(args[0], ex(numeric(1, 2)));
    }
    if (fn == "cbrt") {
      ALLOT_RETURN_IF_ERROR(arity(1, 1));
      return Power(args[0], ex(numeric(1, 3)));
    }
    if (fn == "root") {
      ALLOT_RETURN_IF_ERROR(arity(2, 2));
      if (args[1].is_zero()) return InvalidArgument("root of degree 0");
      return Power(args[0], 1 / args[1]);
    }
    if (fn == "log" || fn == "ln") {
      ALLOT_RETURN_IF_ERROR(arity(1, fn == "ln" ? 1 : 2));
      ALLOT_ASSIGN_OR_RETURN(ex log_x, Log(args[0]));
      if (args.size() == 1) return log_x;
      if (args[1].is_equal(ex(1))) return InvalidArgument("log base 1");
      ALLOT_ASSIGN_OR_RETURN(ex log_base, Log(args[1]));
      return Divide(log_x, log_base);
    }
    if (fn == "log10" || fn == "log2") {
      ALLOT_RETURN_IF_ERROR(arity(1, 1));
      ALLOT_ASSIGN_OR_RETURN(ex log_x, Log(args[0]));
      return log_x / GiNaC::log(ex(fn == "log10" ? 10 : 2));
    }
    if (fn == "atan2") {
      ALLOT_RETURN_IF_ERROR(arity(2, 2));
      return ex(GiNaC::atan2(args[0], args[1]));
    }
    if (fn == "factorial") {
      ALLOT_RETURN_IF_ERROR(arity(1, 1));
      return Factorial(args[0]);
    }
    if (fn == "floor" || fn == "ceil" || fn == "round") {
      ALLOT_RETURN_IF_ERROR(arity(1, 1));
      return RoundLike(args[0], fn);
    }
    if (fn == "gcd" || fn == "lcm") {
      ALLOT_RETURN_IF_ERROR(arity(2, 64));
      ex acc = args[0];
      for (size_t i = 1; i < args.size(); ++i) {
        if (IsExactInteger(acc) && IsExactInteger(args[i])) {
          const numeric& x = GiNaC::ex_to<numeric>(acc);
          const numeric& y = GiNaC::ex_to<numeric>(args[i]);
          acc = fn == "gcd" ? GiNaC::gcd(x, y) : GiNaC::lcm(x, y);
        } else if (symbols_ != nullptr && acc.info(GiNaC::info_flags::rational_polynomial) &&
                   args[i].info(GiNaC::info_flags::rational_polynomial)) {
          acc = fn == "gcd" ? GiNaC::gcd(acc, args[i]) : GiNaC::lcm(acc, args[i]);
        } else {
          return InvalidArgument(fn + "() needs integers (or polynomials), got " +
                                 GinacToString(args[i]));
        }
        ALLOT_RETURN_IF_ERROR(CheckSize(acc));
      }
      return acc;
    }
    if (fn == "comb" || fn == "binomial" || fn == "choose" || fn == "perm") {
      ALLOT_RETURN_IF_ERROR(arity(2, 2));
      ALLOT_ASSIGN_OR_RETURN(numeric nn, SmallNonNegativeInt(args[0], fn.c_str()));
      ALLOT_ASSIGN_OR_RETURN(numeric k, SmallNonNegativeInt(args[1], fn.c_str()));
      if (k > nn) return ex(0);
      if (fn == "perm") return ex(GiNaC::factorial(nn) / GiNaC::factorial(nn - k));
      return ex(GiNaC::binomial(nn, k));
    }
    if (fn == "min" || fn == "max") {
      ALLOT_RETURN_IF_ERROR(arity(1, 256));
      size_t best = 0;
      ALLOT_ASSIGN_OR_RETURN(double best_v, ToRealDouble(args[0], fn.c_str()));
      for (size_t i = 1; i < args.size(); ++i) {
        ALLOT_ASSIGN_OR_RETURN(double v, ToRealDouble(args[i], fn.c_str()));
        if (fn == "min" ? v < best_v : v > best_v) {
          best = i;
          best_v = v;
        }
      }
      return args[best];
    }
    return InvalidArgument("unknown function '" + fn + "'");
  }

  SymbolTable* symbols_;
  const EvalLimits& limits_;
};

}  // namespace

Result<GiNaC::symbol> SymbolTable::Get(const std::string& name, int max_symbols) {
  if (auto it = symbols_.find(name); it != symbols_.end()) return it->second;
  if (static_cast<int>(symbols_.size()) >= max_symbols) {
    return ResourceExhausted("too many distinct symbols (limit " + std::to_string(max_symbols) +
                             ")");
  }
  GiNaC::symbol s(name);
  symbols_.emplace(name, s);
  return s;
}

GiNaC::lst SymbolTable::AsList() const {
  GiNaC::lst out;
  for (const auto& [name, s] : symbols_) out.append(s);
  return out;
}

Result<GiNaC::ex> ToGinac(const ExprNode& node, SymbolTable* symbols, const EvalLimits& limits) {
  try {
    return Evaluator(symbols, limits).Eval(node);
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("cannot evaluate: ") + e.what());
  }
}

Result<GiNaC::ex> ParseToGinac(std::string_view text, SymbolTable* symbols,
                               const EvalLimits& limits) {
  ALLOT_ASSIGN_OR_RETURN(auto tree, ParseExpression(text, limits.parse));
  return ToGinac(*tree, symbols, limits);
}

GiNaC::ex SimplifiedRoot(const GiNaC::ex& base, int q) {
  const numeric one_over_q(1, q);
  if (!IsExactRational(base) || (q != 2 && q != 3)) return GiNaC::pow(base, one_over_q);
  const numeric& b = GiNaC::ex_to<numeric>(base);
  if (!b.is_positive() || RationalBits(b) > 256) return GiNaC::pow(base, one_over_q);
  // (a/d)^(1/q) = (a * d^(q-1))^(1/q) / d: one radical with an integer radicand.
  const numeric d = b.denom();
  numeric radicand = b.numer() * GiNaC::pow(d, numeric(q - 1));
  numeric outside(1);
  ExtractPowers(radicand, outside, q);
  return outside / d * GiNaC::pow(ex(radicand), one_over_q);
}

double EstimateExpandedTerms(const GiNaC::ex& e) {
  constexpr double kCap = 1e18;
  if (GiNaC::is_a<GiNaC::add>(e)) {
    double total = 0;
    for (size_t i = 0; i < e.nops(); ++i) total += EstimateExpandedTerms(e.op(i));
    return std::min(total, kCap);
  }
  if (GiNaC::is_a<GiNaC::mul>(e) || GiNaC::is_a<GiNaC::lst>(e) || GiNaC::is_a<GiNaC::matrix>(e) ||
      GiNaC::is_a<GiNaC::relational>(e)) {
    const bool product = GiNaC::is_a<GiNaC::mul>(e);
    double total = product ? 1 : 0;
    for (size_t i = 0; i < e.nops(); ++i) {
      const double t = EstimateExpandedTerms(e.op(i));
      total = product ? total * t : total + t;
      if (total > kCap) return kCap;
    }
    return total;
  }
  if (GiNaC::is_a<GiNaC::power>(e) && IsExactInteger(e.op(1))) {
    const double t = EstimateExpandedTerms(e.op(0));
    const long n = std::labs(GiNaC::ex_to<numeric>(e.op(1)).to_long());
    // Terms of a multinomial (t terms)^n: C(t + n - 1, n).
    double c = 1;
    for (long i = 1; i <= n; ++i) {
      c = c * (t + static_cast<double>(i) - 1) / static_cast<double>(i);
      if (c > kCap) return kCap;
    }
    return c;
  }
  if (GiNaC::is_a<GiNaC::function>(e)) {
    double total = 1;
    for (size_t i = 0; i < e.nops(); ++i) total += EstimateExpandedTerms(e.op(i));
    return std::min(total, kCap);
  }
  return 1;
}

std::string GinacToString(const GiNaC::ex& e) {
  std::ostringstream os;
  os << e;
  return os.str();
}

Result<std::string> GinacToDecimal(const GiNaC::ex& e, int significant_digits) {
  try {
    const ex v = e.evalf();
    if (!GiNaC::is_a<numeric>(v)) {
      return InvalidArgument("not a number: " + GinacToString(e));
    }
    const numeric& n = GiNaC::ex_to<numeric>(v);
    auto fmt = [&](double d) -> Result<std::string> {
      if (!std::isfinite(d)) return GinacToString(v);
      char buf[64];
      std::snprintf(buf, sizeof(buf), "%.*g", significant_digits, d);
      std::string s = buf;
      return s == "-0" ? std::string("0") : s;
    };
    if (n.is_real()) return fmt(n.to_double());
    ALLOT_ASSIGN_OR_RETURN(std::string re, fmt(n.real().to_double()));
    ALLOT_ASSIGN_OR_RETURN(std::string im, fmt(n.imag().to_double()));
    return re + (im.front() == '-' ? "" : "+") + im + "*I";
  } catch (const std::exception& ex) {
    return InvalidArgument(std::string("cannot evaluate numerically: ") + ex.what());
  }
}

}  // namespace allot::math
