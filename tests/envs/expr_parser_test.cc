#include "math/expr_parser.h"

#include <gtest/gtest.h>

#include <string>

#include "tools/calculator_tools.h"

namespace allot::tools {
namespace {

std::string Tree(const std::string& text) {
  auto r = math::ParseExpression(text);
  return r.ok() ? math::ExprToString(**r) : "ERROR: " + r.status().message();
}

TEST(ExprParserTest, PrecedenceAndAssociativity) {
  EXPECT_EQ(Tree("1 + 2 * 3"), "(1 + (2 * 3))");
  EXPECT_EQ(Tree("2 ^ 3 ^ 2"), "(2 ^ (3 ^ 2))");
  EXPECT_EQ(Tree("-2^2"), "(-(2 ^ 2))");
  EXPECT_EQ(Tree("2^-1"), "(2 ^ (-1))");
  EXPECT_EQ(Tree("10 - 4 - 3"), "((10 - 4) - 3)");
  EXPECT_EQ(Tree("5!"), "(5!)");
  EXPECT_EQ(Tree("2 ** 3"), "(2 ^ 3)");
}

TEST(ExprParserTest, ImplicitMultiplicationAndUnicodeOperators) {
  EXPECT_EQ(Tree("9(5)^2"), "(9 * (5 ^ 2))");
  EXPECT_EQ(Tree("2x"), "(2 * x)");
  EXPECT_EQ(Tree("6 \xC3\x97 7 \xC3\xB7 2"), "((6 * 7) / 2)");
}

TEST(ExprParserTest, RejectsMalformedInput) {
  EXPECT_FALSE(math::ParseExpression("").ok());
  EXPECT_FALSE(math::ParseExpression("1 +").ok());
  EXPECT_FALSE(math::ParseExpression("(1 + 2").ok());
  EXPECT_FALSE(math::ParseExpression("1 $ 2").ok());
  EXPECT_FALSE(math::ParseExpression("__import__('os')").ok() &&
               Calculate("__import__('os')").ok());
  auto r = math::ParseExpression("3 + )");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("at 4"), std::string::npos) << r.status().message();
}

TEST(ExprParserTest, RejectsDeepNestingAndLongInput) {
  const std::string deep = std::string(200, '(') + "1" + std::string(200, ')');
  auto r = math::ParseExpression(deep);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("nested too deeply"), std::string::npos);
  EXPECT_FALSE(math::ParseExpression(std::string(5000, '1')).ok());
  EXPECT_FALSE(math::ParseExpression(std::string(300, '-') + "1").ok());
}

std::string Value(const std::string& expr) {
  auto r = Calculate(expr);
  return r.ok() ? r->exact : "ERROR: " + r.status().message();
}
std::string Decimal(const std::string& expr) {
  auto r = Calculate(expr);
  return r.ok() ? r->decimal : "ERROR: " + r.status().message();
}

TEST(CalculateTest, CogErCaseStudyPolynomial) {
  // CogER App. E, Case Study 1: 5^3 - 9(5)^2 + 23(5) - 21 = -6.
  EXPECT_EQ(Value("5^3 - 9 * (5)^2 + 23 * 5 - 21"), "-6");
  EXPECT_EQ(Value("5^3 - 9(5)^2 + 23(5) - 21"), "-6");
}

TEST(CalculateTest, ExactRationals) {
  EXPECT_EQ(Value("1/3 + 1/6"), "1/2");
  EXPECT_EQ(Decimal("1/3 + 1/6"), "0.5");
  EXPECT_EQ(Value("0.1 + 0.2"), "3/10");
  EXPECT_EQ(Value("1e3 / 8"), "125");
  EXPECT_EQ(Value("2^-2"), "1/4");
  EXPECT_EQ(Value("2^100"), "1267650600228229401496703205376");
}

TEST(CalculateTest, Functions) {
  EXPECT_EQ(Value("sqrt(16)"), "4");
  EXPECT_EQ(Decimal("sqrt(2)"), "1.4142135623731");
  EXPECT_EQ(Value("sqrt(8)"), "2*sqrt(2)");
  EXPECT_EQ(Value("sqrt(1/2)"), "1/2*sqrt(2)");
  EXPECT_EQ(Value("cbrt(54)"), "3*2^(1/3)");
  EXPECT_EQ(Value("5!"), "120");
  EXPECT_EQ(Value("factorial(6)"), "720");
  EXPECT_EQ(Value("gcd(12, 18)"), "6");
  EXPECT_EQ(Value("lcm(4, 6, 10)"), "60");
  EXPECT_EQ(Value("comb(10, 3)"), "120");
  EXPECT_EQ(Value("perm(5, 2)"), "20");
  EXPECT_EQ(Value("17 % 5"), "2");
  EXPECT_EQ(Value("-7 % 3"), "2");  // the sign of the divisor, as in Python
  EXPECT_EQ(Value("floor(7/2) + ceil(7/2) + round(5/2)"), "10");
  EXPECT_EQ(Decimal("log(100, 10)"), "2");
  EXPECT_EQ(Decimal("sin(pi/6)"), "0.5");
  EXPECT_EQ(Decimal("exp(1) - e"), "0");
  EXPECT_EQ(Decimal("log10(1000)"), "3");
}

TEST(CalculateTest, ErrorsInsteadOfCrashes) {
  EXPECT_NE(Value("1/0").find("division by zero"), std::string::npos);
  EXPECT_NE(Value("5 % 0").find("modulo by zero"), std::string::npos);
  EXPECT_NE(Value("x + 1").find("unknown name 'x'"), std::string::npos);
  EXPECT_NE(Value("foo(2)").find("unknown function"), std::string::npos);
  EXPECT_NE(Value("2^(10^10)").find("exponent too large"), std::string::npos);
  EXPECT_NE(Value("9^9^9").find("exponent too large"), std::string::npos);
  EXPECT_NE(Value("100000!").find("too large"), std::string::npos);
  EXPECT_NE(Value("(-3)!").find("non-negative integer"), std::string::npos);
  EXPECT_NE(Value("1 = 1").find("not allowed"), std::string::npos);
  EXPECT_FALSE(Calculate("log(0)").ok());
  EXPECT_FALSE(Calculate("exp(10^6)").ok());
  EXPECT_FALSE(Calculate("1e99999999").ok());
}

std::string LatexTree(const std::string& text) {
  math::ExprLimits limits;
  limits.dialect = math::ExprDialect::kLatex;
  auto r = math::ParseExpression(text, limits);
  return r.ok() ? math::ExprToString(**r) : "ERROR: " + r.status().message();
}

// The LaTeX dialect is what rewards/math_expr.h reads answers with (it used to be a second
// parser there).
TEST(ExprParserTest, LatexDialectReadsAnswers) {
  EXPECT_EQ(LatexTree("\\frac{1}{2}"), "(1 / 2)");
  EXPECT_EQ(LatexTree("\\frac12"), "(1 / 2)");
  EXPECT_EQ(LatexTree("\\dfrac ab"), "(a / b)");
  EXPECT_EQ(LatexTree("xy"), "(x * y)");
  EXPECT_EQ(LatexTree("x_{10} + x_1"), "(x_10 + x_1)");
  EXPECT_EQ(LatexTree("\\sin^2 x"), "(sin(x) ^ 2)");
  EXPECT_EQ(LatexTree("\\log_2 8"), "log(8, 2)");
  EXPECT_EQ(LatexTree("\\sqrt[3]{8}"), "root(8, 3)");
  EXPECT_EQ(LatexTree("2^{10}"), "(2 ^ 10)");
  EXPECT_EQ(LatexTree("3\\pi \\cdot \\alpha"), "((3 * pi) * alpha)");
  EXPECT_EQ(LatexTree("{[(1)]}"), "1");
  // No scientific notation, '=' or lists in answers: "1e3" is 1*e*3.
  EXPECT_EQ(LatexTree("1e3"), "((1 * e) * 3)");
  EXPECT_NE(LatexTree("x = 1").find("ERROR"), std::string::npos);
  EXPECT_NE(LatexTree("[1, 2]").find("ERROR"), std::string::npos);
  EXPECT_NE(LatexTree("\\infty").find("unsupported command"), std::string::npos);
  EXPECT_NE(LatexTree("x_").find("bad subscript"), std::string::npos);
  // The calculator dialect keeps whole names, scientific notation and lists.
  EXPECT_EQ(Tree("xy"), "xy");
  EXPECT_EQ(Tree("1e3"), "1e3");
  EXPECT_EQ(Tree("[1, 2]"), "[1, 2]");
}

// Behaviour that changed when the two front-ends became one: limits are ResourceExhausted in
// both dialects (the calculator's were InvalidArgument), and poles are refused before GiNaC sees
// them (0^0 used to reach GiNaC).
TEST(CalculateTest, MergedFrontEndBehaviour) {
  EXPECT_EQ(math::ParseExpression(std::string(5000, '1')).status().code(),
            StatusCode::kResourceExhausted);
  EXPECT_EQ(
      math::ParseExpression(std::string(200, '(') + "1" + std::string(200, ')')).status().code(),
      StatusCode::kResourceExhausted);
  EXPECT_EQ(math::ParseExpression(std::string(500, '7')).status().code(),
            StatusCode::kResourceExhausted);
  EXPECT_NE(Value("0^0").find("not positive"), std::string::npos);
  EXPECT_NE(Value("log(0)").find("log of zero"), std::string::npos);
  EXPECT_NE(Value("log(8, 0)").find("log of zero"), std::string::npos);
  EXPECT_EQ(Value("sec(0) + csc(pi/2) + cot(pi/4)"), "3");
  EXPECT_NE(Value("csc(0)").find("division by zero"), std::string::npos);
  EXPECT_EQ(Value("e^0 + i^2"), "0");  // named constants stay on in the calculator
}

}  // namespace
}  // namespace allot::tools
