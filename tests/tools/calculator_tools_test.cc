// Symbolic (GiNaC) and statistics tools on known inputs.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tools/calculator_tools.h"
#include "tools/statistics.h"

namespace allot::tools {
namespace {

using nlohmann::json;

// GiNaC prints sums in an order that depends on symbol creation; compare mathematically.
bool SameExpr(const json& got, const std::string& want) {
  if (!got.is_string()) return false;
  math::SymbolTable symbols;
  auto a = math::ParseToGinac(got.get<std::string>(), &symbols, {});
  auto b = math::ParseToGinac(want, &symbols, {});
  return a.ok() && b.ok() && (*a - *b).expand().is_zero();
}

class SymbolicToolsTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(RegisterSymbolicTools(registry_).ok()); }
  json Ok(const std::string& name, const json& p) {
    ToolResult r = registry_.Call({name, p});
    EXPECT_TRUE(r.ok) << name << " " << p.dump() << ": " << r.Render();
    return r.output;
  }
  std::string Err(const std::string& name, const json& p) {
    ToolResult r = registry_.Call({name, p});
    EXPECT_FALSE(r.ok) << name << " " << p.dump() << ": " << r.Render();
    return r.output.is_string() ? r.output.get<std::string>() : r.output.dump();
  }
  ToolRegistry registry_;
};

TEST_F(SymbolicToolsTest, SimplifyExpandFactor) {
  EXPECT_TRUE(SameExpr(Ok("simplify", {{"expression", "(x^2 - 1)/(x - 1)"}})["result"], "1+x"));
  EXPECT_TRUE(SameExpr(Ok("expand", {{"expression", "(x + 1)^3"}})["result"], "1+3*x+3*x^2+x^3"));
  EXPECT_TRUE(SameExpr(Ok("factor", {{"expression", "x^2 - 5x + 6"}})["result"], "(-3+x)*(-2+x)"));
  EXPECT_TRUE(SameExpr(Ok("simplify", {{"expression", "sqrt(8)"}})["result"], "2*sqrt(2)"));
}

TEST_F(SymbolicToolsTest, SolvePolynomialAndLinearSystems) {
  json r = Ok("solve", {{"equations", {"x^2 - 5*x + 6 = 0"}}});
  ASSERT_EQ(r["roots"].size(), 2u);
  EXPECT_EQ((std::set<std::string>{r["roots"][0]["result"], r["roots"][1]["result"]}),
            (std::set<std::string>{"2", "3"}));

  r = Ok("solve", {{"equations", {"x^2 = 2"}}});
  ASSERT_EQ(r["roots"].size(), 2u);
  EXPECT_EQ(r["roots"][0]["result"], "-sqrt(2)");
  EXPECT_EQ(r["roots"][1]["decimal"], "1.4142135623731");

  r = Ok("solve", {{"equations", {"(x - 1)^2*(x + 2)"}}});
  ASSERT_EQ(r["roots"].size(), 2u);
  for (const auto& root : r["roots"]) {
    EXPECT_EQ(root["multiplicity"], root["result"] == "1" ? 2 : 1) << root.dump();
  }

  // Degree 5 with no rational roots beyond x = 0: numeric roots.
  r = Ok("solve", {{"equations", {"x^5 - x - 1 = 0"}}});
  ASSERT_EQ(r["roots"].size(), 5u);
  int real = 0;
  for (const auto& root : r["roots"])
    real += root["result"].get<std::string>().find('I') == std::string::npos;
  EXPECT_EQ(real, 1);

  r = Ok("solve", {{"equations", {"x + y = 3", "x - y = 1"}}});
  EXPECT_EQ(r["solutions"][0], json::parse(R"({"x":"2","y":"1"})"));

  r = Ok("solve", {{"equations", {"2*a = 7"}}, {"variables", {"a"}}});
  EXPECT_EQ(r["solutions"][0]["a"], "7/2");

  EXPECT_NE(Err("solve", {{"equations", {"x*y = 1", "x + y = 3"}}}).find("not linear"),
            std::string::npos);
  EXPECT_NE(Err("solve", {{"equations", {"1 = 2"}}}).find("no variables"), std::string::npos);
}

TEST_F(SymbolicToolsTest, Calculus) {
  EXPECT_TRUE(
      SameExpr(Ok("differentiate", {{"expression", "x^3"}, {"variable", "x"}})["result"], "3*x^2"));
  EXPECT_TRUE(
      SameExpr(Ok("differentiate", {{"expression", "sin(x)"}, {"order", 2}})["result"], "-sin(x)"));
  EXPECT_TRUE(SameExpr(Ok("integrate", {{"expression", "3*x^2 + 1"}})["result"], "x+x^3"));
  EXPECT_EQ(Ok("integrate", {{"expression", "3*x^2 + 1"}, {"lower", 0}, {"upper", 2}})["result"],
            "10");
  const json gauss = Ok("integrate", {{"expression", "exp(-x^2)"}, {"lower", 0}, {"upper", 1}});
  EXPECT_NEAR(std::stod(gauss["result"].get<std::string>()), 0.746824132812427, 1e-9);
  EXPECT_TRUE(SameExpr(Ok("series", {{"expression", "exp(x)"}, {"order", 4}})["result"],
                       "1+x+1/2*x^2+1/6*x^3"));
  EXPECT_EQ(Ok("limit", {{"expression", "sin(x)/x"}, {"point", 0}})["result"], "1");
  EXPECT_EQ(Ok("limit", {{"expression", "(2*x^2 + 1)/(x^2 + 3)"}, {"point", "oo"}})["result"], "2");
  EXPECT_EQ(Ok("limit", {{"expression", "1/x^2"}, {"point", 0}})["result"], "oo");
  EXPECT_EQ(Ok("limit", {{"expression", "1/x"}, {"point", 0}})["result"], "does not exist");
  EXPECT_EQ(Ok("substitute",
               {{"expression", "n^3 - 9*n^2 + 23*n - 21"}, {"values", {{"n", 5}}}})["result"],
            "-6");
}

TEST_F(SymbolicToolsTest, Matrices) {
  EXPECT_EQ(Ok("matrix_determinant", {{"matrix", {{1, 2}, {3, 4}}}})["result"], "-2");
  EXPECT_EQ(Ok("matrix_inverse", {{"matrix", {{1, 2}, {3, 4}}}})["result"],
            json::parse(R"([["-2","1"],["3/2","-1/2"]])"));
  EXPECT_EQ(Ok("matrix_multiply", {{"a", {{1, 2}, {3, 4}}}, {"b", {{0, 1}, {1, 0}}}})["result"],
            json::parse(R"([["2","1"],["4","3"]])"));
  const json eig = Ok("matrix_eigenvalues", {{"matrix", {{2, 0}, {0, 3}}}});
  ASSERT_EQ(eig["eigenvalues"].size(), 2u);
  EXPECT_TRUE(SameExpr(
      Ok("matrix_determinant",
         {{"matrix", json::array({json::array({"a", "b"}), json::array({"c", "d"})})}})["result"],
      "a*d - b*c"));
  EXPECT_NE(Err("matrix_inverse", {{"matrix", {{1, 2}, {2, 4}}}}).find("singular"),
            std::string::npos);
  EXPECT_NE(Err("matrix_multiply", {{"a", {{1, 2}}}, {"b", {{1, 2}}}}).find("shapes"),
            std::string::npos);
  EXPECT_NE(Err("matrix_determinant", {{"matrix", {{1, 2}, {3}}}}).find("ragged"),
            std::string::npos);
}

TEST_F(SymbolicToolsTest, HostileInputIsRefused) {
  EXPECT_NE(Err("expand", {{"expression", "(a+b+c+d+e+f)^60"}}).find("terms"), std::string::npos);
  EXPECT_NE(Err("expand", {{"expression", "(x+1)^100000"}}).find("exponent too large"),
            std::string::npos);
  EXPECT_NE(Err("simplify", {{"expression", std::string(100, '(') + "x" + std::string(100, ')')}})
                .find("nested"),
            std::string::npos);
  Err("simplify", {{"expression", "1/(x-x)"}});
  Err("solve", {{"equations", {"x^2 ="}}});
  Err("limit", {{"expression", "sin(1/x)"}, {"point", 0}});
}

// Episode threads of a rollout worker call the calculator tools at the same time; GiNaC is not
// thread-safe (shared reference-counted constants), so the tools serialize on LockGinac().
// Unguarded, this crashed (SIGSEGV) within a few hundred calls.
TEST(SymbolicToolsThreadTest, ToolsCalledFromManyThreadsAtOnce) {
  ToolRegistry registry;
  ASSERT_TRUE(RegisterSymbolicTools(registry).ok());
  ASSERT_TRUE(RegisterArithmeticTools(registry).ok());
  constexpr int kThreads = 4;
  constexpr int kCalls = 300;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &registry, &wrong] {
      for (int i = 0; i < kCalls; ++i) {
        const int n = (i * 7 + t) % 50 + 2;
        ToolResult expanded =
            registry.Call({"expand", {{"expression", "(x + " + std::to_string(n) + ")^2"}}});
        ToolResult lcm = registry.Call({"lcm", {{"numbers", {n, 2 * n}}}});
        if (!expanded.ok || !expanded.output.contains("result") || !lcm.ok) {
          ++wrong;
        } else if (lcm.output.dump().find(std::to_string(2 * n)) == std::string::npos) {
          ++wrong;
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(StatisticsTest, Descriptive) {
  const std::vector<double> xs = {2, 4, 4, 4, 5, 5, 7, 9};
  EXPECT_DOUBLE_EQ(*stats::Mean(xs), 5.0);
  EXPECT_DOUBLE_EQ(*stats::Median(xs), 4.5);
  EXPECT_DOUBLE_EQ(*stats::Variance(xs, 0), 4.0);
  EXPECT_DOUBLE_EQ(*stats::StdDev(xs, 0), 2.0);
  EXPECT_NEAR(*stats::Variance(xs, 1), 32.0 / 7.0, 1e-12);
  EXPECT_DOUBLE_EQ(*stats::Quantile({1, 2, 3, 4}, 0.25), 1.75);  // NumPy's default
  EXPECT_DOUBLE_EQ(*stats::Quantile({7}, 0.9), 7.0);
  EXPECT_FALSE(stats::Mean({}).ok());
  EXPECT_FALSE(stats::Variance({1.0}, 1).ok());
  EXPECT_FALSE(stats::Quantile({1, 2}, 1.5).ok());
  EXPECT_FALSE(stats::Mean({1, NAN}).ok());
}

TEST(StatisticsTest, RegressionAndCorrelation) {
  auto fit = stats::LinearRegression({1, 2, 3, 4}, {3, 5, 7, 9});
  ASSERT_TRUE(fit.ok());
  EXPECT_DOUBLE_EQ(fit->slope, 2.0);
  EXPECT_DOUBLE_EQ(fit->intercept, 1.0);
  EXPECT_DOUBLE_EQ(fit->r_squared, 1.0);
  EXPECT_NEAR(*stats::PearsonCorrelation({1, 2, 3}, {3, 2, 1}), -1.0, 1e-12);
  EXPECT_FALSE(stats::LinearRegression({1, 1}, {2, 3}).ok());
  EXPECT_FALSE(stats::LinearRegression({1, 2}, {2}).ok());
}

TEST(StatisticsTest, Distributions) {
  EXPECT_NEAR(*stats::NormalCdf(1.96, 0, 1), 0.9750021048517795, 1e-12);
  EXPECT_NEAR(*stats::NormalPdf(0, 0, 1), 0.3989422804014327, 1e-12);
  EXPECT_NEAR(*stats::BinomialPmf(3, 10, 0.5), 120.0 / 1024.0, 1e-12);
  EXPECT_NEAR(*stats::BinomialCdf(3, 10, 0.5), 176.0 / 1024.0, 1e-12);
  EXPECT_NEAR(*stats::PoissonPmf(2, 3.0), 4.5 * std::exp(-3.0), 1e-12);
  EXPECT_NEAR(*stats::PoissonCdf(1, 2.0), 3 * std::exp(-2.0), 1e-12);
  EXPECT_FALSE(stats::NormalCdf(0, 0, 0).ok());
  EXPECT_FALSE(stats::BinomialPmf(1, 10, 1.5).ok());
}

TEST(StatisticsToolsTest, ThroughTheRegistry) {
  ToolRegistry r;
  ASSERT_TRUE(RegisterStatisticsTools(r).ok());
  ToolResult d = r.Call({"describe_data", {{"values", {2, 4, 4, 4, 5, 5, 7, 9}}}});
  ASSERT_TRUE(d.ok) << d.Render();
  EXPECT_EQ(d.output["mean"], 5.0);
  EXPECT_EQ(d.output["population_std"], 2.0);
  ToolResult p = r.Call(
      {"probability_distribution",
       {{"distribution", "binomial"}, {"function", "pmf"}, {"x", 3}, {"n", 10}, {"p", 0.5}}});
  ASSERT_TRUE(p.ok) << p.Render();
  EXPECT_NEAR(p.output["value"].get<double>(), 0.1171875, 1e-12);
  ToolResult missing = r.Call(
      {"probability_distribution", {{"distribution", "poisson"}, {"function", "pmf"}, {"x", 3}}});
  EXPECT_FALSE(missing.ok);
  EXPECT_EQ(missing.output, "parameters: poisson needs 'lambda'");
  EXPECT_FALSE(r.Call({"describe_data", {{"values", json::array()}}}).ok);
}

}  // namespace
}  // namespace allot::tools
