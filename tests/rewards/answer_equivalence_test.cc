#include "rewards/answer_equivalence.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace allot::rewards {
namespace {

struct Case {
  int line;
  bool expected;
  std::string pred, gold;
};

std::vector<Case> LoadTable() {
  std::ifstream in(std::string(ALLOT_TEST_DATA_DIR) + "/rewards/equivalence.tsv");
  std::vector<Case> cases;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> cols;
    std::stringstream ss(line);
    for (std::string col; std::getline(ss, col, '\t');) cols.push_back(col);
    while (cols.size() < 3) cols.emplace_back();
    cases.push_back({n, cols[0] == "1", cols[1], cols[2]});
  }
  return cases;
}

TEST(AnswerEquivalenceTest, TableOfCases) {
  std::vector<Case> cases = LoadTable();
  ASSERT_GE(cases.size(), 200u);
  int failures = 0;
  for (const Case& c : cases) {
    EquivalenceResult r = AnswersEquivalent(c.pred, c.gold);
    if (r.equivalent != c.expected) {
      ++failures;
      ADD_FAILURE() << "equivalence.tsv:" << c.line << ": '" << c.pred << "' vs '" << c.gold
                    << "' expected " << c.expected << ", got " << r.equivalent << " (" << r.reason
                    << ")";
    }
  }
  EXPECT_EQ(failures, 0);
}

TEST(AnswerEquivalenceTest, IsSymmetricOnTheTable) {
  for (const Case& c : LoadTable()) {
    EXPECT_EQ(AnswersEquivalent(c.pred, c.gold).equivalent,
              AnswersEquivalent(c.gold, c.pred).equivalent)
        << "equivalence.tsv:" << c.line;
  }
}

TEST(AnswerEquivalenceTest, NormalizeExamples) {
  EXPECT_EQ(NormalizeAnswer("\\$1,000.").text, "1000");
  EXPECT_EQ(NormalizeAnswer("\\left( \\dfrac12, 3 \\right)").text, "( \\frac{1}{2}, 3 )");
  EXPECT_EQ(NormalizeAnswer("5 \\text{ cm}").text, "5");
  EXPECT_EQ(NormalizeAnswer("2\\frac{1}{2}").text, "(2+\\frac{1}{2})");
  NormalizedAnswer p = NormalizeAnswer("10\\%");
  EXPECT_EQ(p.text, "10");
  EXPECT_TRUE(p.percent);
}

TEST(AnswerEquivalenceTest, ToleranceIsConfigurable) {
  EquivalenceOptions loose;
  loose.math.rel_tol = 1e-2;
  EXPECT_TRUE(AnswersEquivalent("0.333", "\\frac{1}{3}", loose).equivalent);
  EXPECT_FALSE(AnswersEquivalent("0.333", "\\frac{1}{3}").equivalent);
  // Two exact integers never compare with a tolerance.
  EXPECT_FALSE(AnswersEquivalent("1000", "1001", loose).equivalent);
}

TEST(AnswerEquivalenceTest, TooLongIsNeverEquivalent) {
  std::string huge(20000, '1');
  EquivalenceResult r = AnswersEquivalent(huge, huge + "0");
  EXPECT_FALSE(r.equivalent);
  EXPECT_EQ(r.reason, "too_long");
}

// The clock check is a hang guard with a wide margin, not a performance assertion.
TEST(AnswerEquivalenceTest, NormalizeIsLinearOnHostileInput) {
  std::string text, frac, sqrt, deep;
  for (int i = 0; i < 100000; ++i) {
    text += "\\text{";
    frac += "\\frac{";
    sqrt += "\\sqrt[";
  }
  deep = std::string(1 << 20, '{') + std::string(1 << 20, '}');
  auto start = std::chrono::steady_clock::now();
  for (const std::string& s : {text, frac, sqrt, deep}) {
    NormalizedAnswer n = NormalizeAnswer(s);
    EXPECT_LE(n.text.size(), s.size() * 2);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

// Relations, labels and \pm on long inputs: every stage stays linear or bounded (a hang guard
// with a wide margin, not a performance assertion).
TEST(AnswerEquivalenceTest, RelationsStayBoundedOnHostileInput) {
  std::string chain, pms, labels, ors;  // each just under max_input_chars (8192)
  for (int i = 0; i < 800; ++i) {
    chain += "x < 1 < ";
    pms += "1 \\pm ";
    labels += "f(x, y) = ";
    ors += "x > 1 or ";
  }
  auto start = std::chrono::steady_clock::now();
  for (const std::string& s : {chain, pms, labels, ors}) {
    ASSERT_LT(s.size(), 8192u);
    EXPECT_FALSE(AnswersEquivalent(s + "2", "(2, \\infty)").equivalent);
    EXPECT_NE(AnswersEquivalent("\\{1, 2\\}", s + "2").reason, "too_long");
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

TEST(AnswerEquivalenceTest, LargeUnorderedSetsStayWithinTheComparisonBudget) {
  std::string a, b;
  for (int i = 0; i < 60; ++i) {
    a += (i ? ", " : "") + std::string("(x+") + std::to_string(i) + ")^{3}";
    b += (i ? ", " : "") + std::string("(x+") + std::to_string(60 + i) + ")^{3}";
  }
  EquivalenceResult r = AnswersEquivalent(a, b);
  EXPECT_FALSE(r.equivalent);
  EXPECT_EQ(r.reason, "unmatched element");
  // The same multiset in another order matches on normalised strings, without GiNaC.
  std::string reversed;
  for (int i = 59; i >= 0; --i) {
    reversed += (i != 59 ? ", " : "") + std::string("(x+") + std::to_string(i) + ")^{3}";
  }
  EXPECT_TRUE(AnswersEquivalent(a, reversed).equivalent);
  // Small permuted sets are well inside the budget.
  EXPECT_TRUE(AnswersEquivalent("1, 2, 3, 4, 5", "5, 4, 3, 2, 1").equivalent);
}

TEST(AnswerEquivalenceTest, ExactMatchAsQaPapersReportIt) {
  EXPECT_TRUE(ExactMatch("The Eiffel Tower!", "eiffel tower"));
  EXPECT_TRUE(ExactMatch("  a  cat ", "Cat"));
  EXPECT_FALSE(ExactMatch("cats", "cat"));
  EXPECT_EQ(SquadNormalize("An Apple, the Pie."), "apple pie");
}

}  // namespace
}  // namespace allot::rewards
