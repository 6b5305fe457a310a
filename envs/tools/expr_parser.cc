#include "envs/tools/expr_parser.h"

#include <cctype>
#include <utility>

namespace allot::envs::tools {
namespace {

struct Token {
  enum class Type { kEnd, kNumber, kName, kOp };
  Type type = Type::kEnd;
  std::string text;  // for kOp: one of + - * / % ^ = ( ) [ ] , !
  size_t pos = 0;
};

class Parser {
 public:
  Parser(std::string_view text, const ExprLimits& limits) : text_(text), limits_(limits) {}

  Result<std::unique_ptr<ExprNode>> Parse() {
    if (text_.size() > limits_.max_length) {
      return InvalidArgument("expression too long: " + std::to_string(text_.size()) +
                             " characters (limit " + std::to_string(limits_.max_length) + ")");
    }
    ALLOT_RETURN_IF_ERROR(Advance());
    if (tok_.type == Token::Type::kEnd) return InvalidArgument("empty expression");
    ALLOT_ASSIGN_OR_RETURN(auto root, Equation());
    if (tok_.type != Token::Type::kEnd) return Error("unexpected '" + tok_.text + "'");
    return root;
  }

 private:
  Status Error(const std::string& what) const {
    return InvalidArgument("at " + std::to_string(tok_.pos) + ": " + what);
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
    if (std::isalpha(c) || c == '_') {
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
    static constexpr std::string_view kOps = "+-*/%^=()[],!";
    if (kOps.find(static_cast<char>(c)) != std::string_view::npos) {
      tok_.type = Token::Type::kOp;
      tok_.text = std::string(1, static_cast<char>(c));
      ++i_;
      return Status::Ok();
    }
    return Error(c < 0x80 && std::isprint(c)
                     ? std::string("unexpected character '") + static_cast<char>(c) + "'"
                     : "unexpected byte");
  }

  Status LexNumber() {
    size_t j = i_;
    while (j < text_.size() && std::isdigit(static_cast<unsigned char>(text_[j]))) ++j;
    if (j < text_.size() && text_[j] == '.') {
      ++j;
      while (j < text_.size() && std::isdigit(static_cast<unsigned char>(text_[j]))) ++j;
    }
    if (j < text_.size() && (text_[j] == 'e' || text_[j] == 'E')) {
      size_t k = j + 1;
      if (k < text_.size() && (text_[k] == '+' || text_[k] == '-')) ++k;
      if (k < text_.size() && std::isdigit(static_cast<unsigned char>(text_[k]))) {
        j = k;
        while (j < text_.size() && std::isdigit(static_cast<unsigned char>(text_[j]))) ++j;
      }
    }
    if (static_cast<int>(j - i_) > limits_.max_number_digits) {
      return Error("number literal too long");
    }
    tok_.type = Token::Type::kNumber;
    tok_.text = std::string(text_.substr(i_, j - i_));
    i_ = j;
    return Status::Ok();
  }

  bool IsOp(std::string_view op) const { return tok_.type == Token::Type::kOp && tok_.text == op; }

  Result<std::unique_ptr<ExprNode>> NewNode(ExprNode::Kind kind) {
    if (++nodes_ > limits_.max_nodes) return Error("expression too large");
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
    if (depth_ > limits_.max_depth) return Error("expression nested too deeply");
    ALLOT_ASSIGN_OR_RETURN(auto lhs, Sum());
    if (IsOp("=")) {
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
    return tok_.type == Token::Type::kNumber || tok_.type == Token::Type::kName || IsOp("(");
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
    if (depth_ > limits_.max_depth) return Error("expression nested too deeply");
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
    if (depth_ > limits_.max_depth) return Error("expression nested too deeply");
    ALLOT_ASSIGN_OR_RETURN(auto base, Postfix());
    if (IsOp("^")) {
      ALLOT_RETURN_IF_ERROR(Advance());
      ALLOT_ASSIGN_OR_RETURN(auto exponent, Unary());
      return Binary('^', std::move(base), std::move(exponent));
    }
    return base;
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
    if (depth_ > limits_.max_depth) return Error("expression nested too deeply");
    switch (tok_.type) {
      case Token::Type::kEnd:
        return Error("unexpected end of expression");
      case Token::Type::kNumber: {
        ALLOT_ASSIGN_OR_RETURN(auto n, NewNode(ExprNode::Kind::kNumber));
        n->text = tok_.text;
        ALLOT_RETURN_IF_ERROR(Advance());
        return n;
      }
      case Token::Type::kName: {
        std::string name = tok_.text;
        ALLOT_RETURN_IF_ERROR(Advance());
        if (IsOp("(")) {
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

}  // namespace allot::envs::tools
