#include "math/expr_parser.h"

#include <algorithm>
#include <cctype>
#include <utility>

namespace allot::math {
namespace {

struct Token {
  // kCommand (kLatex): \frac, \dfrac, \tfrac, \sqrt; other commands become names or ops.
  enum class Type { kEnd, kNumber, kName, kOp, kCommand };
  Type type = Type::kEnd;
  std::string text;  // for kOp: one of + - * / % ^ = ( ) [ ] { } _ , !
  size_t pos = 0;
  bool whole = true;  // kLatex: a name or number that an argument may not split ("\alpha")
};

// kLatex: words that are applied to an operand, with or without parentheses.
bool IsLatexFunction(std::string_view w) {
  static constexpr std::string_view kNames[] = {"sin", "cos", "tan", "cot", "sec",
                                                "csc", "ln",  "log", "exp", "sqrt"};
  return std::find(std::begin(kNames), std::end(kNames), w) != std::end(kNames);
}

bool IsGreekLetter(std::string_view w) {
  static constexpr std::string_view kGreek[] = {
      "alpha", "beta",  "gamma",  "delta", "epsilon", "varepsilon", "zeta", "eta",
      "theta", "kappa", "lambda", "mu",    "nu",      "xi",         "rho",  "sigma",
      "tau",   "phi",   "varphi", "chi",   "psi",     "omega"};
  return std::find(std::begin(kGreek), std::end(kGreek), w) != std::end(kGreek);
}

class Parser {
 public:
  Parser(std::string_view text, const ExprLimits& limits) : text_(text), limits_(limits) {}

  Result<std::unique_ptr<ExprNode>> Parse() {
    if (text_.size() > limits_.max_length) {
      return ResourceExhausted("expression too long: " + std::to_string(text_.size()) +
                               " characters (limit " + std::to_string(limits_.max_length) + ")");
    }
    ALLOT_RETURN_IF_ERROR(Advance());
    if (tok_.type == Token::Type::kEnd) return InvalidArgument("empty expression");
    ALLOT_ASSIGN_OR_RETURN(auto root, Equation());
    if (tok_.type != Token::Type::kEnd) return Error("unexpected '" + tok_.text + "'");
    return root;
  }

 private:
  bool latex() const { return limits_.dialect == ExprDialect::kLatex; }

  Status Error(const std::string& what) const {
    return InvalidArgument("at " + std::to_string(tok_.pos) + ": " + what);
  }
  Status Exhausted(const std::string& what) const {
    return ResourceExhausted("at " + std::to_string(tok_.pos) + ": " + what);
  }

  // Reads the next token into tok_.
  Status Advance() {
    while (i_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[i_]))) ++i_;
    tok_ = Token{};
    tok_.pos = i_;
    if (i_ >= text_.size()) return Status::Ok();
    const unsigned char c = static_cast<unsigned char>(text_[i_]);
    if (std::isdigit(c) || (c == '.' && i_ + 1 < text_.size() &&
                            std::isdigit(static_cast<unsigned char>(text_[i_ + 1])))) {
      return LexNumber();
    }
    if (latex() && std::isalpha(c)) return LexLatexLetters();
    if (latex() && c == '\\') return LexLatexCommand();
    if (!latex() && (std::isalpha(c) || c == '_')) {
      size_t j = i_;
      while (j < text_.size() &&
             (std::isalnum(static_cast<unsigned char>(text_[j])) || text_[j] == '_')) {
        ++j;
      }
      if (j - i_ > 64) return Error("name too long");
      tok_.type = Token::Type::kName;
      tok_.text = std::string(text_.substr(i_, j - i_));
      i_ = j;
      return Status::Ok();
    }
    // UTF-8 operators an LLM likes to write: × ÷ − ·
    static constexpr std::pair<std::string_view, char> kUtf8[] = {
        {"\xC3\x97", '*'}, {"\xC3\xB7", '/'}, {"\xE2\x88\x92", '-'}, {"\xC2\xB7", '*'}};
    for (const auto& [seq, op] : kUtf8) {
      if (text_.substr(i_, seq.size()) == seq) {
        tok_.type = Token::Type::kOp;
        tok_.text = std::string(1, op);
        i_ += seq.size();
        return Status::Ok();
      }
    }
    if (text_.substr(i_, 2) == "**") {
      tok_.type = Token::Type::kOp;
      tok_.text = "^";
      i_ += 2;
      return Status::Ok();
    }
    const std::string_view ops = latex() ? "+-*/^=()[]{}_!" : "+-*/%^=()[],!";
    if (ops.find(static_cast<char>(c)) != std::string_view::npos) {
      tok_.type = Token::Type::kOp;
      tok_.text = std::string(1, static_cast<char>(c));
      ++i_;
      return Status::Ok();
    }
    return Error(c < 0x80 && std::isprint(c)
                     ? std::string("unexpected character '") + static_cast<char>(c) + "'"
                     : "unexpected byte");
  }

  // kLatex: a function name or "pi" is one word; any other run of letters is read one letter
  // at a time (implicit products), the last one taking a subscript ("x_1", "x_{10}").
  Status LexLatexLetters() {
    size_t j = i_;
    while (j < text_.size() && std::isalpha(static_cast<unsigned char>(text_[j]))) ++j;
    const std::string_view word = text_.substr(i_, j - i_);
    tok_.type = Token::Type::kName;
    tok_.whole = false;
    if (word == "pi" || IsLatexFunction(word)) {
      tok_.text = std::string(word);
      i_ = j;
      return Status::Ok();
    }
    tok_.text = std::string(1, text_[i_]);
    ++i_;
    if (i_ < text_.size() && text_[i_] == '_') {
      ++i_;
      if (i_ < text_.size() && text_[i_] == '{') {
        const size_t close = text_.find('}', i_);
        if (close == std::string_view::npos) return Error("unclosed subscript");
        tok_.text += "_" + std::string(text_.substr(i_ + 1, close - i_ - 1));
        i_ = close + 1;
      } else if (i_ < text_.size() && std::isalnum(static_cast<unsigned char>(text_[i_]))) {
        tok_.text += "_" + std::string(1, text_[i_++]);
      } else {
        return Error("bad subscript");
      }
      if (tok_.text.size() > 66) return Error("name too long");
    }
    return Status::Ok();
  }

  // kLatex: "\cdot" and friends become operators, "\pi", Greek letters and function names
  // become names; \frac and \sqrt stay commands for the parser.
  Status LexLatexCommand() {
    size_t j = i_ + 1;
    while (j < text_.size() && std::isalpha(static_cast<unsigned char>(text_[j]))) ++j;
    if (j == i_ + 1 && j < text_.size()) ++j;  // "\{", "\,"
    const std::string name(text_.substr(i_ + 1, j - i_ - 1));
    if (name == "frac" || name == "dfrac" || name == "tfrac" || name == "sqrt") {
      tok_.type = Token::Type::kCommand;
      tok_.text = name == "sqrt" ? name : "frac";
    } else if (name == "cdot" || name == "times" || name == "div") {
      tok_.type = Token::Type::kOp;
      tok_.text = name == "div" ? "/" : "*";
    } else if (name == "pi" || IsGreekLetter(name) || IsLatexFunction(name)) {
      tok_.type = Token::Type::kName;
      tok_.text = name;
    } else {
      return Error("unsupported command \\" + name);
    }
    i_ = j;
    return Status::Ok();
  }

  Status LexNumber() {
    size_t j = i_;
    while (j < text_.size() && std::isdigit(static_cast<unsigned char>(text_[j]))) ++j;
    // kLatex: "3." ends the number before the dot.
    if (j < text_.size() && text_[j] == '.' &&
        (!latex() ||
         (j + 1 < text_.size() && std::isdigit(static_cast<unsigned char>(text_[j + 1]))))) {
      ++j;
      while (j < text_.size() && std::isdigit(static_cast<unsigned char>(text_[j]))) ++j;
    }
    if (!latex() && j < text_.size() && (text_[j] == 'e' || text_[j] == 'E')) {
      size_t k = j + 1;
      if (k < text_.size() && (text_[k] == '+' || text_[k] == '-')) ++k;
      if (k < text_.size() && std::isdigit(static_cast<unsigned char>(text_[k]))) {
        j = k;
        while (j < text_.size() && std::isdigit(static_cast<unsigned char>(text_[j]))) ++j;
      }
    }
    if (static_cast<int>(j - i_) > limits_.max_number_digits) {
      return Exhausted("number literal too long (limit " +
                       std::to_string(limits_.max_number_digits) + " characters)");
    }
    tok_.type = Token::Type::kNumber;
    tok_.whole = false;
    tok_.text = std::string(text_.substr(i_, j - i_));
    i_ = j;
    return Status::Ok();
  }

  bool IsOp(std::string_view op) const { return tok_.type == Token::Type::kOp && tok_.text == op; }

  Result<std::unique_ptr<ExprNode>> NewNode(ExprNode::Kind kind) {
    if (++nodes_ > limits_.max_nodes) return Exhausted("expression too large");
    auto n = std::make_unique<ExprNode>();
    n->kind = kind;
    return n;
  }

  Result<std::unique_ptr<ExprNode>> Binary(char op, std::unique_ptr<ExprNode> lhs,
                                           std::unique_ptr<ExprNode> rhs) {
    ALLOT_ASSIGN_OR_RETURN(auto n, NewNode(ExprNode::Kind::kBinary));
    n->op = op;
    n->args.push_back(std::move(lhs));
    n->args.push_back(std::move(rhs));
    return n;
  }

  // Guards every recursive production.
  struct DepthGuard {
    explicit DepthGuard(int& d) : depth(d) { ++depth; }
    ~DepthGuard() { --depth; }
    int& depth;
  };

  Result<std::unique_ptr<ExprNode>> Equation() {
    DepthGuard g(depth_);
    if (depth_ > limits_.max_depth) return Exhausted("expression nested too deeply");
    ALLOT_ASSIGN_OR_RETURN(auto lhs, Sum());
    if (IsOp("=") && !latex()) {
      ALLOT_RETURN_IF_ERROR(Advance());
      ALLOT_ASSIGN_OR_RETURN(auto rhs, Sum());
      return Binary('=', std::move(lhs), std::move(rhs));
    }
    return lhs;
  }

  Result<std::unique_ptr<ExprNode>> Sum() {
    ALLOT_ASSIGN_OR_RETURN(auto lhs, Product());
    while (IsOp("+") || IsOp("-")) {
      const char op = tok_.text[0];
      ALLOT_RETURN_IF_ERROR(Advance());
      ALLOT_ASSIGN_OR_RETURN(auto rhs, Product());
      ALLOT_ASSIGN_OR_RETURN(lhs, Binary(op, std::move(lhs), std::move(rhs)));
    }
    return lhs;
  }

  // A token that can start an implicitly multiplied factor: "2x", "2(3)", "(a)(b)".
  bool StartsImplicitFactor() const {
    return tok_.type == Token::Type::kNumber || tok_.type == Token::Type::kName || IsOp("(") ||
           (latex() && (IsOp("[") || IsOp("{") || tok_.type == Token::Type::kCommand));
  }

  Result<std::unique_ptr<ExprNode>> Product() {
    ALLOT_ASSIGN_OR_RETURN(auto lhs, Unary());
    while (true) {
      if (IsOp("*") || IsOp("/") || IsOp("%")) {
        const char op = tok_.text[0];
        ALLOT_RETURN_IF_ERROR(Advance());
        ALLOT_ASSIGN_OR_RETURN(auto rhs, Unary());
        ALLOT_ASSIGN_OR_RETURN(lhs, Binary(op, std::move(lhs), std::move(rhs)));
      } else if (StartsImplicitFactor()) {
        ALLOT_ASSIGN_OR_RETURN(auto rhs, Power());
        ALLOT_ASSIGN_OR_RETURN(lhs, Binary('*', std::move(lhs), std::move(rhs)));
      } else {
        return lhs;
      }
    }
  }

  Result<std::unique_ptr<ExprNode>> Unary() {
    DepthGuard g(depth_);
    if (depth_ > limits_.max_depth) return Exhausted("expression nested too deeply");
    if (IsOp("-") || IsOp("+")) {
      const bool negate = tok_.text == "-";
      ALLOT_RETURN_IF_ERROR(Advance());
      ALLOT_ASSIGN_OR_RETURN(auto operand, Unary());
      if (!negate) return operand;
      ALLOT_ASSIGN_OR_RETURN(auto n, NewNode(ExprNode::Kind::kNegate));
      n->args.push_back(std::move(operand));
      return n;
    }
    return Power();
  }

  Result<std::unique_ptr<ExprNode>> Power() {
    DepthGuard g(depth_);
    if (depth_ > limits_.max_depth) return Exhausted("expression nested too deeply");
    ALLOT_ASSIGN_OR_RETURN(auto base, Postfix());
    if (IsOp("^")) {
      ALLOT_RETURN_IF_ERROR(Advance());
      ALLOT_ASSIGN_OR_RETURN(auto exponent, IsOp("{") ? Argument() : Unary());
      return Binary('^', std::move(base), std::move(exponent));
    }
    return base;
  }

  // kLatex: the argument of \frac, \sqrt, '^' and '_': a braced group, or one character of a
  // number or a run of letters ("\frac12" = 1/2, "\frac ab" = a/b), or a primary.
  Result<std::unique_ptr<ExprNode>> Argument() {
    DepthGuard g(depth_);
    if (depth_ > limits_.max_depth) return Exhausted("expression nested too deeply");
    if (IsOp("{")) {
      ALLOT_RETURN_IF_ERROR(Advance());
      ALLOT_ASSIGN_OR_RETURN(auto inner, Equation());
      if (!IsOp("}")) return Error("expected '}'");
      ALLOT_RETURN_IF_ERROR(Advance());
      return inner;
    }
    const bool digit =
        tok_.type == Token::Type::kNumber && std::isdigit(static_cast<unsigned char>(tok_.text[0]));
    const bool letter = tok_.type == Token::Type::kName && !tok_.whole;
    if ((digit || letter) && tok_.text.size() > 1) {
      // Take the first character and read on right after it.
      ALLOT_ASSIGN_OR_RETURN(auto n,
                             NewNode(digit ? ExprNode::Kind::kNumber : ExprNode::Kind::kName));
      n->text = tok_.text.substr(0, 1);
      i_ = tok_.pos + 1;
      ALLOT_RETURN_IF_ERROR(Advance());
      return n;
    }
    return Primary();
  }

  // kLatex: a function word applied to its operand: "\sin(x)", "\sin{x}", "\sin x",
  // "\sin^2 x" = (sin x)^2, "\log_2 8" = log(8, 2).
  Result<std::unique_ptr<ExprNode>> LatexFunction(std::string name) {
    std::unique_ptr<ExprNode> power;
    if (IsOp("^")) {
      ALLOT_RETURN_IF_ERROR(Advance());
      ALLOT_ASSIGN_OR_RETURN(power, Argument());
    }
    std::unique_ptr<ExprNode> base;
    if (name == "log" && IsOp("_")) {
      ALLOT_RETURN_IF_ERROR(Advance());
      ALLOT_ASSIGN_OR_RETURN(base, Argument());
    }
    std::unique_ptr<ExprNode> operand;
    if (IsOp("(")) {
      ALLOT_RETURN_IF_ERROR(Advance());
      ALLOT_ASSIGN_OR_RETURN(operand, Equation());
      if (!IsOp(")")) return Error("expected ')'");
      ALLOT_RETURN_IF_ERROR(Advance());
    } else if (IsOp("{")) {
      ALLOT_ASSIGN_OR_RETURN(operand, Argument());
    } else {
      ALLOT_ASSIGN_OR_RETURN(operand, Power());
    }
    ALLOT_ASSIGN_OR_RETURN(auto call, NewNode(ExprNode::Kind::kCall));
    call->text = std::move(name);
    call->args.push_back(std::move(operand));
    if (base) call->args.push_back(std::move(base));
    if (!power) return call;
    return Binary('^', std::move(call), std::move(power));
  }

  // kLatex: \frac{a}{b} and \sqrt[n]{x} (a call of root(x, n)).
  Result<std::unique_ptr<ExprNode>> LatexCommand() {
    const std::string cmd = tok_.text;
    ALLOT_RETURN_IF_ERROR(Advance());
    if (cmd == "frac") {
      ALLOT_ASSIGN_OR_RETURN(auto num, Argument());
      ALLOT_ASSIGN_OR_RETURN(auto den, Argument());
      return Binary('/', std::move(num), std::move(den));
    }
    std::unique_ptr<ExprNode> degree;
    if (IsOp("[")) {
      ALLOT_RETURN_IF_ERROR(Advance());
      ALLOT_ASSIGN_OR_RETURN(degree, Equation());
      if (!IsOp("]")) return Error("expected ']'");
      ALLOT_RETURN_IF_ERROR(Advance());
    }
    ALLOT_ASSIGN_OR_RETURN(auto radicand, Argument());
    ALLOT_ASSIGN_OR_RETURN(auto call, NewNode(ExprNode::Kind::kCall));
    call->text = degree ? "root" : "sqrt";
    call->args.push_back(std::move(radicand));
    if (degree) call->args.push_back(std::move(degree));
    return call;
  }

  Result<std::unique_ptr<ExprNode>> Postfix() {
    ALLOT_ASSIGN_OR_RETURN(auto n, Primary());
    while (IsOp("!")) {
      ALLOT_RETURN_IF_ERROR(Advance());
      ALLOT_ASSIGN_OR_RETURN(auto f, NewNode(ExprNode::Kind::kFactorial));
      f->args.push_back(std::move(n));
      n = std::move(f);
    }
    return n;
  }

  // Parses "a, b, c" up to `close`, which it consumes.
  Status Args(ExprNode& into, std::string_view close) {
    if (IsOp(close)) return Advance();
    while (true) {
      ALLOT_ASSIGN_OR_RETURN(auto arg, Equation());
      into.args.push_back(std::move(arg));
      if (IsOp(",")) {
        ALLOT_RETURN_IF_ERROR(Advance());
        continue;
      }
      if (IsOp(close)) return Advance();
      return Error("expected ',' or '" + std::string(close) + "'");
    }
  }

  Result<std::unique_ptr<ExprNode>> Primary() {
    DepthGuard g(depth_);
    if (depth_ > limits_.max_depth) return Exhausted("expression nested too deeply");
    switch (tok_.type) {
      case Token::Type::kEnd:
        return Error("unexpected end of expression");
      case Token::Type::kNumber: {
        ALLOT_ASSIGN_OR_RETURN(auto n, NewNode(ExprNode::Kind::kNumber));
        n->text = tok_.text;
        ALLOT_RETURN_IF_ERROR(Advance());
        return n;
      }
      case Token::Type::kCommand:
        return LatexCommand();
      case Token::Type::kName: {
        std::string name = tok_.text;
        ALLOT_RETURN_IF_ERROR(Advance());
        if (latex() && IsLatexFunction(name)) return LatexFunction(std::move(name));
        if (IsOp("(") && !latex()) {
          ALLOT_RETURN_IF_ERROR(Advance());
          ALLOT_ASSIGN_OR_RETURN(auto n, NewNode(ExprNode::Kind::kCall));
          n->text = std::move(name);
          ALLOT_RETURN_IF_ERROR(Args(*n, ")"));
          return n;
        }
        ALLOT_ASSIGN_OR_RETURN(auto n, NewNode(ExprNode::Kind::kName));
        n->text = std::move(name);
        return n;
      }
      case Token::Type::kOp:
        if (IsOp("(")) {
          ALLOT_RETURN_IF_ERROR(Advance());
          ALLOT_ASSIGN_OR_RETURN(auto inner, Equation());
          if (!IsOp(")")) return Error("expected ')'");
          ALLOT_RETURN_IF_ERROR(Advance());
          return inner;
        }
        if (latex() && (IsOp("[") || IsOp("{"))) {
          const std::string close = IsOp("[") ? "]" : "}";
          ALLOT_RETURN_IF_ERROR(Advance());
          ALLOT_ASSIGN_OR_RETURN(auto inner, Equation());
          if (!IsOp(close)) return Error("expected '" + close + "'");
          ALLOT_RETURN_IF_ERROR(Advance());
          return inner;
        }
        if (IsOp("[")) {
          ALLOT_RETURN_IF_ERROR(Advance());
          ALLOT_ASSIGN_OR_RETURN(auto n, NewNode(ExprNode::Kind::kList));
          ALLOT_RETURN_IF_ERROR(Args(*n, "]"));
          return n;
        }
        return Error("unexpected '" + tok_.text + "'");
    }
    return Error("unexpected token");
  }

  std::string_view text_;
  const ExprLimits& limits_;
  size_t i_ = 0;
  Token tok_;
  int depth_ = 0;
  int nodes_ = 0;
};

}  // namespace

Result<std::unique_ptr<ExprNode>> ParseExpression(std::string_view text, const ExprLimits& limits) {
  return Parser(text, limits).Parse();
}

bool HasDecimalLiteral(const ExprNode& node) {
  if (node.kind == ExprNode::Kind::kNumber) {
    const size_t dot = node.text.find('.');
    return dot != std::string::npos && dot + 1 < node.text.size() &&
           std::isdigit(static_cast<unsigned char>(node.text[dot + 1]));
  }
  for (const auto& arg : node.args) {
    if (HasDecimalLiteral(*arg)) return true;
  }
  return false;
}

std::string ExprToString(const ExprNode& node) {
  switch (node.kind) {
    case ExprNode::Kind::kNumber:
    case ExprNode::Kind::kName:
      return node.text;
    case ExprNode::Kind::kNegate:
      return "(-" + ExprToString(*node.args[0]) + ")";
    case ExprNode::Kind::kFactorial:
      return "(" + ExprToString(*node.args[0]) + "!)";
    case ExprNode::Kind::kBinary:
      return "(" + ExprToString(*node.args[0]) + " " + node.op + " " + ExprToString(*node.args[1]) +
             ")";
    case ExprNode::Kind::kCall:
    case ExprNode::Kind::kList: {
      std::string out = node.kind == ExprNode::Kind::kCall ? node.text + "(" : "[";
      for (size_t i = 0; i < node.args.size(); ++i) {
        if (i) out += ", ";
        out += ExprToString(*node.args[i]);
      }
      return out + (node.kind == ExprNode::Kind::kCall ? ")" : "]");
    }
  }
  return "?";
}

}  // namespace allot::math
