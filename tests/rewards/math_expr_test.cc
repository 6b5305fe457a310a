#include "rewards/math_expr.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "rewards/answer_equivalence.h"

namespace allot::rewards {
namespace {

TEST(MathExprTest, CanonicalForms) {
  EXPECT_EQ(*CanonicalMath("\\frac{1}{2}"), "1/2");
  EXPECT_EQ(*CanonicalMath("0.25"), "1/4");
  EXPECT_EQ(*CanonicalMath("\\sqrt{4}"), "2");
  EXPECT_EQ(*CanonicalMath("\\frac{6}{4}"), "3/2");
  EXPECT_EQ(*CanonicalMath("2^{10}"), "1024");
  EXPECT_EQ(*CanonicalMath("3!"), "6");
}

TEST(MathExprTest, SymbolicEquality) {
  EXPECT_TRUE(*MathEqual("(x+1)^2", "x^2+2x+1"));
  EXPECT_FALSE(*MathEqual("(x+1)^2", "x^2+1"));
  EXPECT_TRUE(*MathEqual("\\frac{x^2-1}{x-1}", "x+1"));
  EXPECT_TRUE(*MathEqual("\\sin^2 x+\\cos^2 x", "1"));
}

// A rollout worker grades episodes on several threads at once, and GiNaC shares reference-
// counted nodes (its constants 0, 1, ...) between every expression without atomics: unguarded,
// this crashed (SIGSEGV) or gave wrong answers within a few hundred calls.
TEST(MathExprTest, ComparisonsFromManyThreadsAtOnce) {
  constexpr int kThreads = 4;
  constexpr int kCalls = 1500;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &wrong] {
      for (int i = 0; i < kCalls; ++i) {
        const std::string n = std::to_string((i * 7 + t) % 50 + 1);
        Result<bool> same = MathEqual("\\frac{" + n + "}{3}", n + "/3 + (x+1)^2 - x^2 - 2x - 1");
        Result<bool> differ = MathEqual("\\frac{" + n + "}{3}", n + "/4");
        Result<std::string> canonical = CanonicalMath("\\frac{2 \\cdot " + n + "}{2}");
        if (!same.ok() || !*same || !differ.ok() || *differ || !canonical.ok() || *canonical != n) {
          ++wrong;
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(MathExprTest, UnsupportedAndMalformedAreErrorsNotCrashes) {
  for (const char* bad : {"\\infty", "1 \\pm 2", "\\frac{1}{0}", "(((", ")", "2^", "\\frac{1}",
                          "x_", "\\unknowncmd", "1001!", "0^{-1}", "(-1)!"}) {
    Result<std::string> r = CanonicalMath(bad);
    EXPECT_FALSE(r.ok()) << bad << " -> " << (r.ok() ? *r : "");
  }
}

TEST(MathExprTest, LimitsAreResourceErrors) {
  EXPECT_EQ(CanonicalMath("2^{2^{30}}").status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(CanonicalMath("x^{100000}").status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(CanonicalMath("(x^{200})^{200}").status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(CanonicalMath(std::string(300, '9')).status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(CanonicalMath(std::string(200, '(') + "1" + std::string(200, ')')).status().code(),
            StatusCode::kResourceExhausted);
  EXPECT_EQ(CanonicalMath(std::string(2000, '1')).status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(CanonicalMath(std::string(100, '-') + "1").status().code(),
            StatusCode::kResourceExhausted);
}

// Answers are read by the calculator's front-end in its LaTeX dialect (math/). What that
// changed against the former rewards-only parser is pinned here.
TEST(MathExprTest, SharedFrontEndDifferences) {
  // tan stays tan (it used to become sin/cos); cot, sec and csc are powers of tan, cos and sin.
  EXPECT_EQ(*CanonicalMath("\\tan x"), "tan(x)");
  EXPECT_EQ(*CanonicalMath("\\sec x"), "cos(x)^(-1)");
  EXPECT_TRUE(*MathEqual("\\tan x", "\\frac{\\sin x}{\\cos x}"));
  // "**", the Unicode operators and \dfrac are read; n! of a symbol stays factorial(n).
  EXPECT_EQ(*CanonicalMath("2**3 \xC3\x97 3"), "24");
  EXPECT_EQ(*CanonicalMath("\\dfrac{3}{6}"), "1/2");
  EXPECT_EQ(*CanonicalMath("n!"), "n!");
  EXPECT_TRUE(*MathEqual("n!", "n!"));
  // Unchanged: e and i are symbols in answers, decimals compare with a tolerance, square roots
  // pull out perfect squares.
  EXPECT_EQ(*CanonicalMath("e^2"), "e^2");
  EXPECT_TRUE(*MathEqual("0.333333333", "\\frac{1}{3}", {.rel_tol = 1e-6}));
  EXPECT_FALSE(*MathEqual("\\frac{333}{1000}", "\\frac{1}{3}"));
  EXPECT_EQ(*CanonicalMath("\\sqrt{8}"), "2*sqrt(2)");
  EXPECT_EQ(CanonicalMath("\\ln 0").status().code(), StatusCode::kInvalidArgument);
}

// The clock check is a hang guard with a wide margin, not a performance assertion.
TEST(MathExprTest, HostileLatexIsBoundedInTime) {
  std::string nested_frac;
  for (int i = 0; i < 5000; ++i) nested_frac += "\\frac{1}{";
  std::string tower = "2";
  for (int i = 0; i < 50; ++i) tower = "2^{" + tower + "}";
  std::string big_expansion = "(a+b+c+d+e+f+g)^{250}";
  std::string megabyte(1 << 20, 'x');
  std::string nested_sqrt;
  for (int i = 0; i < 40; ++i) nested_sqrt += "\\sqrt{";
  nested_sqrt += "2" + std::string(40, '}');
  auto start = std::chrono::steady_clock::now();
  for (const std::string& s : {nested_frac, tower, big_expansion, megabyte, nested_sqrt}) {
    (void)CanonicalMath(s);
    (void)MathEqual(s, "1");
    EXPECT_FALSE(AnswersEquivalent(s, "1").equivalent);
  }
  // A large but allowed expansion is decided by evaluation rather than expand().
  Result<bool> eq = MathEqual(big_expansion, big_expansion + "+1");
  ASSERT_TRUE(eq.ok()) << eq.status().ToString();
  EXPECT_FALSE(*eq);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
}

}  // namespace
}  // namespace allot::rewards
