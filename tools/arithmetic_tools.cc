// Basic arithmetic and statistics tools of RSTKit (CogER App. D.2, Table 8).
#include <cmath>
#include <memory>
#include <vector>

#include "tools/calculator_tools.h"
#include "tools/json_schema.h"
#include "tools/statistics.h"

namespace allot::tools {
namespace {

using nlohmann::json;

constexpr int64_t kMaxFactorization = 1'000'000'000'000;  // trial division stays < 1e6 steps

Result<GiNaC::ex> JsonToExact(const json& v, const math::EvalLimits& limits) {
  if (!v.is_number()) return InvalidArgument("expected a number, got " + JsonTypeName(v));
  return math::ParseToGinac(v.dump(), nullptr, limits);
}

Result<json> CalculationJson(const GiNaC::ex& value) {
  json out;
  out["value"] = math::GinacToString(value);
  Result<std::string> dec = math::GinacToDecimal(value);
  if (dec.ok()) out["decimal"] = *dec;
  return out;
}

std::vector<double> Doubles(const json& arr) {
  std::vector<double> out;
  out.reserve(arr.size());
  for (const auto& v : arr) out.push_back(v.get<double>());
  return out;
}

json NumberArray(int max_items) {
  return json{
      {"type", "array"}, {"items", {{"type", "number"}}}, {"minItems", 1}, {"maxItems", max_items}};
}

// Every tool here runs under math::LockGinac(): the registry calls tools from many episode threads.
Status Add(ToolRegistry& r, ToolSpec spec, FunctionTool::Fn fn) {
  FunctionTool::Fn locked = [fn = std::move(fn)](const json& params) -> Result<json> {
    auto lock = math::LockGinac();
    return fn(params);
  };
  return r.Register(std::make_unique<FunctionTool>(std::move(spec), std::move(locked)));
}

}  // namespace

Result<Calculation> Calculate(std::string_view expression, const math::EvalLimits& limits) {
  auto lock = math::LockGinac();
  ALLOT_ASSIGN_OR_RETURN(GiNaC::ex value, math::ParseToGinac(expression, nullptr, limits));
  if (GiNaC::is_a<GiNaC::lst>(value)) return InvalidArgument("a list is not a number");
  Calculation c;
  c.exact = math::GinacToString(value);
  c.rational =
      GiNaC::is_a<GiNaC::numeric>(value) && GiNaC::ex_to<GiNaC::numeric>(value).is_rational();
  ALLOT_ASSIGN_OR_RETURN(c.decimal, math::GinacToDecimal(value));
  return c;
}

Status RegisterArithmeticTools(ToolRegistry& registry, const math::EvalLimits& limits) {
  ALLOT_RETURN_IF_ERROR(Add(
      registry,
      {"calculate",
       "arithmetic",
       "Evaluates an arithmetic expression exactly (fractions stay exact) and as a decimal. "
       "Supports + - * / % ^, parentheses, sqrt, log, exp, sin/cos/tan, factorial (n!), gcd, "
       "lcm, comb, perm, floor, ceil, round, pi and e.",
       {{"type", "object"},
        {"properties",
         {{"expression",
           {{"type", "string"}, {"minLength", 1}, {"description", "e.g. 5^3 - 9*5^2 + 23*5"}}}}},
        {"required", {"expression"}},
        {"additionalProperties", false}},
       {json{{"expression", "5^3 - 9*(5)^2 + 23*5 - 21"}}}},
      [limits](const json& p) -> Result<json> {
        ALLOT_ASSIGN_OR_RETURN(Calculation c,
                               Calculate(p["expression"].get<std::string>(), limits));
        return json{{"value", c.exact}, {"decimal", c.decimal}};
      }));

  for (const std::string fn : {"gcd", "lcm"}) {
    ALLOT_RETURN_IF_ERROR(Add(registry,
                              {fn,
                               "arithmetic",
                               fn == "gcd" ? "Greatest common divisor of two or more integers."
                                           : "Least common multiple of two or more integers.",
                               {{"type", "object"},
                                {"properties",
                                 {{"numbers",
                                   {{"type", "array"},
                                    {"items", {{"type", "integer"}}},
                                    {"minItems", 2},
                                    {"maxItems", 64}}}}},
                                {"required", {"numbers"}},
                                {"additionalProperties", false}},
                               {json{{"numbers", {12, 18}}}}},
                              [fn, limits](const json& p) -> Result<json> {
                                std::string expr = fn + "(";
                                for (size_t i = 0; i < p["numbers"].size(); ++i) {
                                  expr += (i ? "," : "") + p["numbers"][i].dump();
                                }
                                ALLOT_ASSIGN_OR_RETURN(
                                    GiNaC::ex v, math::ParseToGinac(expr + ")", nullptr, limits));
                                return json{{"value", math::GinacToString(v)}};
                              }));
  }

  ALLOT_RETURN_IF_ERROR(Add(
      registry,
      {"factorial",
       "arithmetic",
       "n! for a non-negative integer n.",
       {{"type", "object"},
        {"properties", {{"n", {{"type", "integer"}, {"minimum", 0}}}}},
        {"required", {"n"}},
        {"additionalProperties", false}},
       {json{{"n", 10}}}},
      [limits](const json& p) -> Result<json> {
        ALLOT_ASSIGN_OR_RETURN(
            GiNaC::ex v, math::ParseToGinac("factorial(" + p["n"].dump() + ")", nullptr, limits));
        return json{{"value", math::GinacToString(v)}};
      }));

  for (const std::string fn : {"combinations", "permutations"}) {
    ALLOT_RETURN_IF_ERROR(
        Add(registry,
            {fn,
             "arithmetic",
             fn == "combinations" ? "Number of ways to choose k of n items, order ignored: C(n, k)."
                                  : "Number of ordered arrangements of k of n items: P(n, k).",
             {{"type", "object"},
              {"properties",
               {{"n", {{"type", "integer"}, {"minimum", 0}}},
                {"k", {{"type", "integer"}, {"minimum", 0}}}}},
              {"required", {"n", "k"}},
              {"additionalProperties", false}},
             {json{{"n", 10}, {"k", 3}}}},
            [fn, limits](const json& p) -> Result<json> {
              const std::string expr = (fn == "combinations" ? "comb(" : "perm(") + p["n"].dump() +
                                       "," + p["k"].dump() + ")";
              ALLOT_ASSIGN_OR_RETURN(GiNaC::ex v, math::ParseToGinac(expr, nullptr, limits));
              return json{{"value", math::GinacToString(v)}};
            }));
  }

  ALLOT_RETURN_IF_ERROR(
      Add(registry,
          {"prime_factorization",
           "arithmetic",
           "Prime factors of an integer 2 <= n <= 10^12, with multiplicities.",
           {{"type", "object"},
            {"properties",
             {{"n", {{"type", "integer"}, {"minimum", 2}, {"maximum", kMaxFactorization}}}}},
            {"required", {"n"}},
            {"additionalProperties", false}},
           {json{{"n", 360}}}},
          [](const json& p) -> Result<json> {
            int64_t n = p["n"].get<int64_t>();
            json factors = json::array();
            for (int64_t d = 2; d * d <= n; d += (d == 2 ? 1 : 2)) {
              int power = 0;
              while (n % d == 0) {
                n /= d;
                ++power;
              }
              if (power) factors.push_back({{"prime", d}, {"power", power}});
            }
            if (n > 1) factors.push_back({{"prime", n}, {"power", 1}});
            return json{{"factors", factors}};
          }));

  ALLOT_RETURN_IF_ERROR(
      Add(registry,
          {"percentage",
           "arithmetic",
           "Percent arithmetic: 'of' gives a% of b, 'ratio' gives a as a percent of b, 'change' "
           "gives the percent change from a to b.",
           {{"type", "object"},
            {"properties",
             {{"operation", {{"type", "string"}, {"enum", {"of", "ratio", "change"}}}},
              {"a", {{"type", "number"}}},
              {"b", {{"type", "number"}}}}},
            {"required", {"operation", "a", "b"}},
            {"additionalProperties", false}},
           {json{{"operation", "of"}, {"a", 15}, {"b", 80}}}},
          [limits](const json& p) -> Result<json> {
            ALLOT_ASSIGN_OR_RETURN(GiNaC::ex a, JsonToExact(p["a"], limits));
            ALLOT_ASSIGN_OR_RETURN(GiNaC::ex b, JsonToExact(p["b"], limits));
            const std::string op = p["operation"].get<std::string>();
            GiNaC::ex v;
            if (op == "of") {
              v = a * b / 100;
            } else {
              const GiNaC::ex denom = op == "ratio" ? b : a;
              if (denom.is_zero()) return InvalidArgument("division by zero");
              v = op == "ratio" ? a / b * 100 : (b - a) / a * 100;
            }
            return CalculationJson(v);
          }));
  return Status::Ok();
}

Status RegisterStatisticsTools(ToolRegistry& registry) {
  constexpr int kMaxValues = 100000;
  ALLOT_RETURN_IF_ERROR(
      Add(registry,
          {"describe_data",
           "statistics",
           "Descriptive statistics of a list of numbers: count, mean, median, sample variance and "
           "standard deviation, min, max and quartiles.",
           {{"type", "object"},
            {"properties", {{"values", NumberArray(kMaxValues)}}},
            {"required", {"values"}},
            {"additionalProperties", false}},
           {json{{"values", {2, 4, 4, 4, 5, 5, 7, 9}}}}},
          [](const json& p) -> Result<json> {
            const std::vector<double> xs = Doubles(p["values"]);
            json out{{"count", xs.size()}};
            ALLOT_ASSIGN_OR_RETURN(double mean, stats::Mean(xs));
            ALLOT_ASSIGN_OR_RETURN(double median, stats::Median(xs));
            ALLOT_ASSIGN_OR_RETURN(double q1, stats::Quantile(xs, 0.25));
            ALLOT_ASSIGN_OR_RETURN(double q3, stats::Quantile(xs, 0.75));
            out["mean"] = mean;
            out["median"] = median;
            out["q1"] = q1;
            out["q3"] = q3;
            out["min"] = *std::min_element(xs.begin(), xs.end());
            out["max"] = *std::max_element(xs.begin(), xs.end());
            ALLOT_ASSIGN_OR_RETURN(out["population_variance"], stats::Variance(xs, 0));
            ALLOT_ASSIGN_OR_RETURN(out["population_std"], stats::StdDev(xs, 0));
            if (xs.size() > 1) {
              ALLOT_ASSIGN_OR_RETURN(out["sample_variance"], stats::Variance(xs, 1));
              ALLOT_ASSIGN_OR_RETURN(out["sample_std"], stats::StdDev(xs, 1));
            }
            return out;
          }));

  ALLOT_RETURN_IF_ERROR(Add(registry,
                            {"quantile",
                             "statistics",
                             "Quantiles of a list of numbers (linear interpolation), q in [0, 1].",
                             {{"type", "object"},
                              {"properties",
                               {{"values", NumberArray(kMaxValues)},
                                {"q",
                                 {{"type", "array"},
                                  {"items", {{"type", "number"}, {"minimum", 0}, {"maximum", 1}}},
                                  {"minItems", 1},
                                  {"maxItems", 100}}}}},
                              {"required", {"values", "q"}},
                              {"additionalProperties", false}},
                             {json{{"values", {1, 2, 3, 4}}, {"q", {0.5, 0.9}}}}},
                            [](const json& p) -> Result<json> {
                              const std::vector<double> xs = Doubles(p["values"]);
                              json out = json::array();
                              for (const auto& q : p["q"]) {
                                ALLOT_ASSIGN_OR_RETURN(double v,
                                                       stats::Quantile(xs, q.get<double>()));
                                out.push_back({{"q", q}, {"value", v}});
                              }
                              return json{{"quantiles", out}};
                            }));

  for (const std::string fn : {"linear_regression", "correlation"}) {
    ALLOT_RETURN_IF_ERROR(
        Add(registry,
            {fn,
             "statistics",
             fn == "linear_regression"
                 ? "Least-squares line y = slope*x + intercept through paired data, with R^2."
                 : "Pearson correlation coefficient of paired data.",
             {{"type", "object"},
              {"properties", {{"x", NumberArray(kMaxValues)}, {"y", NumberArray(kMaxValues)}}},
              {"required", {"x", "y"}},
              {"additionalProperties", false}},
             {json{{"x", {1, 2, 3}}, {"y", {2, 4, 6.5}}}}},
            [fn](const json& p) -> Result<json> {
              const std::vector<double> x = Doubles(p["x"]);
              const std::vector<double> y = Doubles(p["y"]);
              if (fn == "correlation") {
                ALLOT_ASSIGN_OR_RETURN(double r, stats::PearsonCorrelation(x, y));
                return json{{"r", r}};
              }
              ALLOT_ASSIGN_OR_RETURN(stats::LinearFit fit, stats::LinearRegression(x, y));
              return json{{"slope", fit.slope},
                          {"intercept", fit.intercept},
                          {"r_squared", fit.r_squared},
                          {"n", fit.n}};
            }));
  }

  ALLOT_RETURN_IF_ERROR(Add(
      registry,
      {"probability_distribution",
       "statistics",
       "Density, mass or cumulative probability: normal (x, mean, std), binomial (k as x, n, "
       "p) or poisson (k as x, lambda).",
       {{"type", "object"},
        {"properties",
         {{"distribution", {{"type", "string"}, {"enum", {"normal", "binomial", "poisson"}}}},
          {"function", {{"type", "string"}, {"enum", {"pdf", "pmf", "cdf"}}}},
          {"x", {{"type", "number"}}},
          {"mean", {{"type", "number"}}},
          {"std", {{"type", "number"}}},
          {"n", {{"type", "integer"}, {"minimum", 0}}},
          {"p", {{"type", "number"}, {"minimum", 0}, {"maximum", 1}}},
          {"lambda", {{"type", "number"}, {"minimum", 0}}}}},
        {"required", {"distribution", "function", "x"}},
        {"additionalProperties", false}},
       {json{{"distribution", "binomial"}, {"function", "pmf"}, {"x", 3}, {"n", 10}, {"p", 0.5}}}},
      [](const json& p) -> Result<json> {
        const std::string dist = p["distribution"].get<std::string>();
        const bool cdf = p["function"] == "cdf";
        const double x = p["x"].get<double>();
        auto need = [&](const char* key) -> Status {
          if (!p.contains(key)) {
            return InvalidArgument("parameters: " + dist + " needs '" + key + "'");
          }
          return Status::Ok();
        };
        double v = 0;
        if (dist == "normal") {
          const double mean = p.value("mean", 0.0);
          const double sd = p.value("std", 1.0);
          ALLOT_ASSIGN_OR_RETURN(
              v, cdf ? stats::NormalCdf(x, mean, sd) : stats::NormalPdf(x, mean, sd));
        } else {
          if (x != std::floor(x) || std::fabs(x) > 1e9) {
            return InvalidArgument("parameters.x: " + dist + " needs an integer count");
          }
          const long k = static_cast<long>(x);
          if (dist == "binomial") {
            ALLOT_RETURN_IF_ERROR(need("n"));
            ALLOT_RETURN_IF_ERROR(need("p"));
            const long n = p["n"].get<long>();
            const double prob = p["p"].get<double>();
            ALLOT_ASSIGN_OR_RETURN(
                v, cdf ? stats::BinomialCdf(k, n, prob) : stats::BinomialPmf(k, n, prob));
          } else {
            ALLOT_RETURN_IF_ERROR(need("lambda"));
            const double lambda = p["lambda"].get<double>();
            ALLOT_ASSIGN_OR_RETURN(
                v, cdf ? stats::PoissonCdf(k, lambda) : stats::PoissonPmf(k, lambda));
          }
        }
        return json{{"value", v}};
      }));
  return Status::Ok();
}

}  // namespace allot::tools
