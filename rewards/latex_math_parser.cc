#include "rewards/latex_math_parser.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <stdexcept>

namespace allot::rewards {
namespace {

using GiNaC::ex;
using GiNaC::numeric;

// Internal to this file: a parse failure unwinds to ParseLatexMath() and becomes a Status there.
// GiNaC reports its own failures by exception too, so one catch site covers both.
struct ParseError : std::runtime_error {
  ParseError(StatusCode code, const std::string& what) : std::runtime_error(what), code(code) {}
  StatusCode code;
};

[[noreturn]] void Fail(const std::string& what) {
  throw ParseError(StatusCode::kInvalidArgument, what);
}
[[noreturn]] void Exhausted(const std::string& what) {
  throw ParseError(StatusCode::kResourceExhausted, what);
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlpha(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }

const std::vector<std::string>& GreekLetters() {
  static const std::vector<std::string> kGreek = {
      "alpha", "beta",  "gamma",  "delta", "epsilon", "varepsilon", "zeta", "eta",
      "theta", "kappa", "lambda", "mu",    "nu",      "xi",         "rho",  "sigma",
      "tau",   "phi",   "varphi", "chi",   "psi",     "omega"};
  return kGreek;
}

bool IsFunctionName(std::string_view n) {
  return n == "sin" || n == "cos" || n == "tan" || n == "cot" || n == "sec" || n == "csc" ||
         n == "ln" || n == "log" || n == "exp" || n == "sqrt";
}

int64_t BitLength(const numeric& n) {
  if (n.is_zero()) return 0;
  return n.is_integer() ? n.int_length() : std::max(n.numer().int_length(), n.denom().int_length());
}

class Parser {
 public:
  Parser(std::string_view text, const MathLimits& limits, MathSymbols& symbols)
      : s_(text), limits_(limits), symbols_(symbols) {}

  ex Parse() {
    if (s_.size() > limits_.max_length) {
      Exhausted("expression of " + std::to_string(s_.size()) + " characters exceeds the limit " +
                std::to_string(limits_.max_length));
    }
    ex v = ParseExpr();
    SkipSpace();
    if (pos_ != s_.size()) Fail(Where("unexpected '" + std::string(1, s_[pos_]) + "'"));
    return v;
  }
  bool inexact() const { return inexact_; }

 private:
  struct DepthGuard {
    explicit DepthGuard(Parser& p) : p(p) {
      if (++p.depth_ > p.limits_.max_depth) {
        Exhausted("nesting deeper than " + std::to_string(p.limits_.max_depth));
      }
    }
    ~DepthGuard() { --p.depth_; }
    Parser& p;
  };

  std::string Where(const std::string& what) const {
    return what + " at offset " + std::to_string(pos_);
  }
  void SkipSpace() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n')) ++pos_;
  }
  char Peek() {
    SkipSpace();
    return pos_ < s_.size() ? s_[pos_] : '\0';
  }
  // The name of the command at pos_ ("frac" for "\frac"), without consuming it.
  std::string PeekCommand() {
    SkipSpace();
    if (pos_ >= s_.size() || s_[pos_] != '\\') return "";
    size_t p = pos_ + 1;
    while (p < s_.size() && IsAlpha(s_[p])) ++p;
    if (p == pos_ + 1 && p < s_.size()) return std::string(1, s_[p]);  // "\{", "\,"
    return std::string(s_.substr(pos_ + 1, p - pos_ - 1));
  }
  void ConsumeCommand(const std::string& name) { pos_ += 1 + name.size(); }
  void Expect(char c) {
    if (Peek() != c) Fail(Where(std::string("expected '") + c + "'"));
    ++pos_;
  }

  ex ParseExpr() {
    DepthGuard guard(*this);
    ex v = ParseUnary();
    for (;;) {
      char c = Peek();
      if (c == '+') {
        ++pos_;
        v = v + ParseUnary();
      } else if (c == '-') {
        ++pos_;
        v = v - ParseUnary();
      } else {
        return v;
      }
    }
  }

  ex ParseUnary() {
    DepthGuard guard(*this);
    char c = Peek();
    if (c == '-') {
      ++pos_;
      return -ParseUnary();
    }
    if (c == '+') {
      ++pos_;
      return ParseUnary();
    }
    return ParseTerm();
  }

  bool StartsFactor() {
    char c = Peek();
    if (IsDigit(c) || IsAlpha(c) || c == '(' || c == '[' || c == '{' || c == '.') return true;
    if (c != '\\') return false;
    std::string cmd = PeekCommand();
    return cmd == "frac" || cmd == "sqrt" || cmd == "pi" || IsFunctionName(cmd) ||
           std::find(GreekLetters().begin(), GreekLetters().end(), cmd) != GreekLetters().end();
  }

  ex ParseTerm() {
    ex v = ParsePower();
    for (;;) {
      char c = Peek();
      std::string cmd = PeekCommand();
      if (c == '*' || cmd == "cdot" || cmd == "times") {
        if (c == '*')
          ++pos_;
        else
          ConsumeCommand(cmd);
        v = v * ParseSignedFactor();
      } else if (c == '/' || cmd == "div") {
        if (c == '/')
          ++pos_;
        else
          ConsumeCommand(cmd);
        v = Divide(v, ParseSignedFactor());
      } else if (StartsFactor()) {
        v = v * ParsePower();
      } else {
        return v;
      }
    }
  }

  // After * or /, a sign is allowed: "2*-3".
  ex ParseSignedFactor() {
    DepthGuard guard(*this);
    char c = Peek();
    if (c == '-') {
      ++pos_;
      return -ParseSignedFactor();
    }
    if (c == '+') {
      ++pos_;
      return ParseSignedFactor();
    }
    return ParsePower();
  }

  ex ParsePower() {
    DepthGuard guard(*this);
    ex base = ParsePostfix();
    if (Peek() != '^') return base;
    ++pos_;
    ex exponent;
    char c = Peek();
    if (c == '{') {
      ++pos_;
      exponent = ParseExpr();
      Expect('}');
    } else if (c == '-') {
      ++pos_;
      exponent = -ParsePower();
    } else {
      exponent = ParsePower();  // right-associative; a bare number is taken whole
    }
    return SafePow(base, exponent);
  }

  ex SafePow(const ex& base, const ex& exponent) {
    // GiNaC throws from inside its evaluation of 0^-k and leaks the half-built node, so poles
    // are refused before they reach it.
    if (base.is_zero() &&
        !(GiNaC::is_a<numeric>(exponent) && GiNaC::ex_to<numeric>(exponent).real().is_positive())) {
      Fail(Where("0 to a power that is not positive"));  // 0^0, 0^-k, 0^x
    }
    if (GiNaC::is_a<numeric>(exponent)) {
      const numeric k = GiNaC::ex_to<numeric>(exponent);
      if (GiNaC::is_a<numeric>(base)) {
        const numeric b = GiNaC::ex_to<numeric>(base);
        if (k.is_rational()) {
          double bits = std::abs(k.to_double()) * static_cast<double>(BitLength(b));
          if (bits > static_cast<double>(limits_.max_numeric_bits)) {
            Exhausted("power of about " + std::to_string(static_cast<int64_t>(bits)) +
                      " bits exceeds the limit " + std::to_string(limits_.max_numeric_bits));
          }
        }
      } else if (k.is_rational() &&
                 std::abs(k.to_double()) > static_cast<double>(limits_.max_symbolic_exponent)) {
        Exhausted("exponent " + std::to_string(k.to_double()) + " on a symbolic base exceeds " +
                  std::to_string(limits_.max_symbolic_exponent));
      }
    }
    ex r = GiNaC::pow(base, exponent);
    // GiNaC folds (x^a)^b and x^a*x^b, so check the folded result as well.
    if (GiNaC::is_a<GiNaC::power>(r) && GiNaC::is_a<numeric>(r.op(1)) &&
        !GiNaC::is_a<numeric>(r.op(0))) {
      double k = std::abs(GiNaC::ex_to<numeric>(r.op(1)).to_double());
      if (k > static_cast<double>(limits_.max_symbolic_exponent)) {
        Exhausted("folded exponent exceeds " + std::to_string(limits_.max_symbolic_exponent));
      }
    }
    return r;
  }

  // Division and log that refuse poles themselves: GiNaC throws from inside its evaluation
  // there and leaks the half-built node.
  ex Divide(const ex& a, const ex& b) {
    if (b.is_zero()) Fail(Where("division by zero"));
    return a / b;
  }
  ex Log(const ex& a) {
    if (a.is_zero()) Fail(Where("log of zero"));
    return GiNaC::log(a);
  }

  ex ParsePostfix() {
    ex v = ParsePrimary();
    while (Peek() == '!') {
      ++pos_;
      if (!GiNaC::is_a<numeric>(v) || !GiNaC::ex_to<numeric>(v).is_nonneg_integer() ||
          GiNaC::ex_to<numeric>(v) > 1000) {
        Fail(Where("factorial of something other than an integer 0..1000"));
      }
      v = GiNaC::factorial(v);
    }
    return v;
  }

  // A braced group, or a single character / command: the argument of \frac, \sqrt, ^.
  ex ParseArgument() {
    DepthGuard guard(*this);
    char c = Peek();
    if (c == '{') {
      ++pos_;
      ex v = ParseExpr();
      Expect('}');
      return v;
    }
    if (IsDigit(c)) {
      ++pos_;
      return numeric(c - '0');
    }
    if (IsAlpha(c)) {
      ++pos_;
      return symbols_.Get(std::string(1, c));
    }
    return ParsePrimary();
  }

  ex ParseNumber() {
    size_t start = pos_;
    std::string digits;
    size_t frac_digits = 0;
    bool seen_dot = false;
    while (pos_ < s_.size() && (IsDigit(s_[pos_]) || (s_[pos_] == '.' && !seen_dot))) {
      if (s_[pos_] == '.') {
        if (pos_ + 1 >= s_.size() || !IsDigit(s_[pos_ + 1])) break;  // "3." ends the number
        seen_dot = true;
      } else {
        digits += s_[pos_];
        if (seen_dot) ++frac_digits;
      }
      ++pos_;
    }
    if (digits.empty()) Fail(Where("expected a number"));
    if (static_cast<int>(digits.size()) > limits_.max_digits) {
      Exhausted("number of " + std::to_string(digits.size()) + " digits at offset " +
                std::to_string(start) + " exceeds " + std::to_string(limits_.max_digits));
    }
    numeric v(digits.c_str());
    if (frac_digits > 0) {
      inexact_ = true;
      v = v / numeric(10).power(static_cast<long>(frac_digits));
    }
    return v;
  }

  ex ParseFunction(const std::string& name) {
    // "\sin^2 x" is (sin x)^2.
    ex power = 1;
    if (Peek() == '^') {
      ++pos_;
      power = ParseArgument();
    }
    ex base_of_log = 0;
    bool has_base = false;
    if (name == "log" && Peek() == '_') {
      ++pos_;
      base_of_log = ParseArgument();
      has_base = true;
    }
    ex arg;
    char c = Peek();
    if (c == '(') {
      ++pos_;
      arg = ParseExpr();
      Expect(')');
    } else if (c == '{') {
      arg = ParseArgument();
    } else {
      arg = ParsePower();
    }
    ex v;
    if (name == "sin") {
      v = GiNaC::sin(arg);
    } else if (name == "cos") {
      v = GiNaC::cos(arg);
    } else if (name == "tan") {
      v = Divide(GiNaC::sin(arg), GiNaC::cos(arg));
    } else if (name == "cot") {
      v = Divide(GiNaC::cos(arg), GiNaC::sin(arg));
    } else if (name == "sec") {
      v = Divide(1, GiNaC::cos(arg));
    } else if (name == "csc") {
      v = Divide(1, GiNaC::sin(arg));
    } else if (name == "exp") {
      v = GiNaC::exp(arg);
    } else if (name == "sqrt") {
      v = SafePow(arg, numeric(1, 2));
    } else if (has_base) {
      v = Divide(Log(arg), Log(base_of_log));
    } else {
      v = Log(arg);  // ln, and log without a base
    }
    return power.is_equal(1) ? v : SafePow(v, power);
  }

  ex ParseLetters() {
    size_t start = pos_;
    while (pos_ < s_.size() && IsAlpha(s_[pos_])) ++pos_;
    std::string word(s_.substr(start, pos_ - start));
    if (word == "pi") return GiNaC::Pi;
    if (IsFunctionName(word)) return ParseFunction(word);
    ex v = 1;
    for (size_t i = 0; i < word.size(); ++i) {
      std::string name(1, word[i]);
      if (i + 1 == word.size() && pos_ < s_.size() && s_[pos_] == '_') {
        ++pos_;  // x_1, x_{10}
        name += "_" + Subscript();
      }
      v = v * symbols_.Get(name);
    }
    return v;
  }

  std::string Subscript() {
    if (pos_ < s_.size() && s_[pos_] == '{') {
      size_t close = s_.find('}', pos_);
      if (close == std::string_view::npos) Fail(Where("unclosed subscript"));
      std::string sub(s_.substr(pos_ + 1, close - pos_ - 1));
      pos_ = close + 1;
      return sub;
    }
    if (pos_ < s_.size() && (IsAlpha(s_[pos_]) || IsDigit(s_[pos_])))
      return std::string(1, s_[pos_++]);
    Fail(Where("bad subscript"));
  }

  ex ParsePrimary() {
    DepthGuard guard(*this);
    char c = Peek();
    if (c == '(' || c == '[' || c == '{') {
      char close = c == '(' ? ')' : c == '[' ? ']' : '}';
      ++pos_;
      ex v = ParseExpr();
      Expect(close);
      return v;
    }
    if (IsDigit(c) || c == '.') return ParseNumber();
    if (IsAlpha(c)) return ParseLetters();
    if (c == '\\') {
      std::string cmd = PeekCommand();
      ConsumeCommand(cmd);
      if (cmd == "frac") {
        ex num = ParseArgument();
        ex den = ParseArgument();
        return Divide(num, den);
      }
      if (cmd == "sqrt") {
        if (Peek() == '[') {
          ++pos_;
          ex n = ParseExpr();
          Expect(']');
          ex arg = ParseArgument();
          return SafePow(arg, Divide(1, n));
        }
        return SafePow(ParseArgument(), numeric(1, 2));
      }
      if (cmd == "pi") return GiNaC::Pi;
      if (IsFunctionName(cmd)) return ParseFunction(cmd);
      if (std::find(GreekLetters().begin(), GreekLetters().end(), cmd) != GreekLetters().end()) {
        return symbols_.Get(cmd);
      }
      Fail(Where("unsupported command \\" + cmd));
    }
    if (c == '\0') Fail(Where("unexpected end of expression"));
    Fail(Where("unexpected '" + std::string(1, c) + "'"));
  }

  std::string_view s_;
  const MathLimits& limits_;
  MathSymbols& symbols_;
  size_t pos_ = 0;
  int depth_ = 0;
  bool inexact_ = false;
};

}  // namespace

Result<ParsedMath> ParseLatexMath(std::string_view text, const MathLimits& limits,
                                  MathSymbols& symbols) {
  try {
    Parser p(text, limits, symbols);
    ParsedMath out;
    out.value = p.Parse();
    out.inexact = p.inexact();
    return out;
  } catch (const ParseError& e) {
    return Status(e.code, "maths '" + std::string(text.substr(0, 80)) + "': " + e.what());
  } catch (const std::exception& e) {  // GiNaC: division by zero, domain errors
    return InvalidArgument("maths '" + std::string(text.substr(0, 80)) + "': " + e.what());
  }
}

}  // namespace allot::rewards
