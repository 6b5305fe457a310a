// Symbolic computation tools of RSTKit (CogER App. D.2, Table 8), on GiNaC instead of SymPy.
//
// GiNaC has no general solve() or limit(). Here: linear systems go through lsolve; single
// polynomial equations are factored over the rationals, with exact roots for factors of degree
// <= 2 and Durand-Kerner numeric roots for higher factors; limits come from a Laurent series
// at the point (so limits GiNaC cannot expand, e.g. essential singularities, are refused).
#include <cctype>
#include <complex>
#include <memory>
#include <vector>

#include "tools/calculator_tools.h"

namespace allot::tools {
namespace {

using GiNaC::ex;
using nlohmann::json;

constexpr int kMaxMatrixDim = 12;
constexpr int kMaxNumericDegree = 64;

struct Ctx {
  math::SymbolTable symbols;
  const math::EvalLimits& limits;
};

// Every tool here runs under math::LockGinac(): the registry calls tools from many episode threads.
Status Add(ToolRegistry& r, ToolSpec spec, FunctionTool::Fn fn) {
  FunctionTool::Fn locked = [fn = std::move(fn)](const json& params) -> Result<json> {
    auto lock = math::LockGinac();
    return fn(params);
  };
  return r.Register(std::make_unique<FunctionTool>(std::move(spec), std::move(locked)));
}

Result<ex> Parse(Ctx& ctx, const std::string& text) {
  return math::ParseToGinac(text, &ctx.symbols, ctx.limits);
}

Result<GiNaC::symbol> Variable(Ctx& ctx, const std::string& name) {
  bool ok = !name.empty() && name.size() <= 64 &&
            (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_');
  for (char c : name) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  if (!ok || name == "pi" || name == "e" || name == "E" || name == "I" || name == "i") {
    return InvalidArgument("'" + name + "' is not a usable variable name");
  }
  return ctx.symbols.Get(name, ctx.limits.max_symbols);
}

// Picks the variable: the named one, or the only free symbol.
Result<GiNaC::symbol> PickVariable(Ctx& ctx, const json& p, const char* key) {
  if (p.contains(key)) return Variable(ctx, p[key].get<std::string>());
  if (ctx.symbols.symbols().size() == 1) return ctx.symbols.symbols().begin()->second;
  return InvalidArgument(std::string("parameters: name the '") + key + "' (the expression has " +
                         std::to_string(ctx.symbols.symbols().size()) + " free symbols)");
}

Status CheckExpandable(const ex& e, const math::EvalLimits& limits) {
  const double terms = math::EstimateExpandedTerms(e);
  if (terms > limits.max_expand_terms) {
    return ResourceExhausted("expression would expand to about " +
                             std::to_string(static_cast<long long>(terms)) + " terms (limit " +
                             std::to_string(limits.max_expand_terms) + ")");
  }
  return Status::Ok();
}

bool IsRationalNumber(const ex& e) {
  return GiNaC::is_a<GiNaC::numeric>(e) && GiNaC::ex_to<GiNaC::numeric>(e).is_rational();
}

json Value(const ex& e) {
  json out{{"result", math::GinacToString(e)}};
  Result<std::string> dec = math::GinacToDecimal(e);
  if (dec.ok() && *dec != math::GinacToString(e)) out["decimal"] = *dec;
  return out;
}

json Expression(const char* doc) {
  return {{"type", "string"}, {"minLength", 1}, {"description", doc}};
}

json ObjectSchema(json properties, json required) {
  return {{"type", "object"},
          {"properties", std::move(properties)},
          {"required", std::move(required)},
          {"additionalProperties", false}};
}

// Roots of a univariate polynomial with numeric coefficients, by Durand-Kerner iteration.
Result<std::vector<std::complex<double>>> NumericRoots(const ex& poly, const GiNaC::symbol& x) {
  const int deg = poly.degree(x);
  if (deg > kMaxNumericDegree) return ResourceExhausted("polynomial degree too high");
  std::vector<std::complex<double>> c(static_cast<size_t>(deg) + 1);
  for (int k = 0; k <= deg; ++k) {
    const ex ck = poly.coeff(x, k).evalf();
    if (!GiNaC::is_a<GiNaC::numeric>(ck)) {
      return InvalidArgument("no closed form: coefficients of degree-" + std::to_string(deg) +
                             " factor are not numbers");
    }
    const auto& n = GiNaC::ex_to<GiNaC::numeric>(ck);
    c[static_cast<size_t>(k)] = {n.real().to_double(), n.imag().to_double()};
  }
  const std::complex<double> lead = c.back();
  for (auto& v : c) v /= lead;
  std::vector<std::complex<double>> roots(static_cast<size_t>(deg));
  const std::complex<double> seed(0.4, 0.9);
  for (size_t i = 0; i < roots.size(); ++i) roots[i] = std::pow(seed, static_cast<double>(i));
  for (int iter = 0; iter < 500; ++iter) {
    double change = 0;
    for (size_t i = 0; i < roots.size(); ++i) {
      std::complex<double> num = 0;  // Horner on the monic polynomial
      for (int k = deg; k >= 0; --k) num = num * roots[i] + c[static_cast<size_t>(k)];
      std::complex<double> den = 1;
      for (size_t j = 0; j < roots.size(); ++j) {
        if (j != i) den *= roots[i] - roots[j];
      }
      if (std::abs(den) == 0) den = 1e-12;
      const std::complex<double> step = num / den;
      roots[i] -= step;
      change = std::max(change, std::abs(step));
    }
    if (change < 1e-14) break;
  }
  return roots;
}

json NumberJson(std::complex<double> z) {
  auto clean = [](double v) { return std::fabs(v) < 1e-12 ? 0.0 : v; };
  char buf[96];
  if (std::fabs(z.imag()) < 1e-10 * std::max(1.0, std::abs(z))) {
    std::snprintf(buf, sizeof(buf), "%.12g", clean(z.real()));
  } else {
    std::snprintf(buf, sizeof(buf), "%.12g%+.12g*I", clean(z.real()), clean(z.imag()));
  }
  return buf;
}

// Roots of `poly` (== 0) in x: factors over Q, exact up to degree 2.
Result<json> PolynomialRoots(const ex& poly_in, const GiNaC::symbol& x,
                             const math::EvalLimits& limits) {
  ALLOT_RETURN_IF_ERROR(CheckExpandable(poly_in, limits));
  const ex poly = poly_in.expand();
  if (!poly.is_polynomial(x)) return InvalidArgument("not a polynomial in " + x.get_name());
  if (poly.degree(x) == 0) {
    return InvalidArgument(poly.is_zero() ? "the equation holds for every " + x.get_name()
                                          : "the equation has no solution");
  }
  const ex factored = GiNaC::factor(poly);
  std::vector<std::pair<ex, int>> factors;
  auto add_factor = [&](const ex& f) {
    if (GiNaC::is_a<GiNaC::power>(f) && GiNaC::is_a<GiNaC::numeric>(f.op(1))) {
      factors.emplace_back(f.op(0), GiNaC::ex_to<GiNaC::numeric>(f.op(1)).to_int());
    } else {
      factors.emplace_back(f, 1);
    }
  };
  if (GiNaC::is_a<GiNaC::mul>(factored)) {
    for (size_t i = 0; i < factored.nops(); ++i) add_factor(factored.op(i));
  } else {
    add_factor(factored);
  }
  json roots = json::array();
  for (const auto& [f, mult] : factors) {
    const ex fe = f.expand();
    const int deg = fe.degree(x);
    if (deg == 0) continue;
    if (deg == 1) {
      const ex r = (-fe.coeff(x, 0) / fe.coeff(x, 1)).normal();
      json j = Value(r);
      j["multiplicity"] = mult;
      roots.push_back(j);
    } else if (deg == 2) {
      const ex a = fe.coeff(x, 2), b = fe.coeff(x, 1), c = fe.coeff(x, 0);
      const ex disc = (b * b - 4 * a * c).expand();
      for (int sign : {-1, 1}) {
        const ex root = IsRationalNumber(disc) ? math::SimplifiedRoot(disc, 2) : GiNaC::sqrt(disc);
        const ex r = ((-b + sign * root) / (2 * a)).normal();
        json j = Value(r);
        j["multiplicity"] = mult;
        roots.push_back(j);
      }
    } else {
      ALLOT_ASSIGN_OR_RETURN(auto numeric, NumericRoots(fe, x));
      for (const auto& z : numeric) {
        roots.push_back({{"result", NumberJson(z)}, {"multiplicity", mult}, {"numeric", true}});
      }
    }
  }
  return json{{"variable", x.get_name()}, {"roots", roots}};
}

Result<ex> ParseMatrix(Ctx& ctx, const json& m, const char* name) {
  const size_t rows = m.size();
  const size_t cols = rows ? m[0].size() : 0;
  if (rows == 0 || cols == 0) return InvalidArgument(std::string(name) + ": empty matrix");
  if (rows > kMaxMatrixDim || cols > kMaxMatrixDim) {
    return ResourceExhausted(std::string(name) + ": matrices are limited to " +
                             std::to_string(kMaxMatrixDim) + "x" + std::to_string(kMaxMatrixDim));
  }
  GiNaC::matrix out(static_cast<unsigned>(rows), static_cast<unsigned>(cols));
  for (size_t r = 0; r < rows; ++r) {
    if (m[r].size() != cols) {
      return InvalidArgument(std::string(name) + "[" + std::to_string(r) + "]: ragged row");
    }
    for (size_t c = 0; c < cols; ++c) {
      const json& v = m[r][c];
      ALLOT_ASSIGN_OR_RETURN(ex e, Parse(ctx, v.is_string() ? v.get<std::string>() : v.dump()));
      out(static_cast<unsigned>(r), static_cast<unsigned>(c)) = e;
    }
  }
  return ex(out);
}

json MatrixJson(const GiNaC::matrix& m) {
  json rows = json::array();
  for (unsigned r = 0; r < m.rows(); ++r) {
    json row = json::array();
    for (unsigned c = 0; c < m.cols(); ++c) row.push_back(math::GinacToString(m(r, c).normal()));
    rows.push_back(row);
  }
  return rows;
}

json MatrixSchema() {
  return {{"type", "array"},
          {"minItems", 1},
          {"maxItems", kMaxMatrixDim},
          {"items",
           {{"type", "array"},
            {"minItems", 1},
            {"maxItems", kMaxMatrixDim},
            {"items", {{"type", json::array({"number", "string"})}}}}}};
}

// lim_{x -> point} e, from the Laurent expansion in t where x = point + t (or x = 1/t at oo).
Result<json> Limit(const ex& e, const GiNaC::symbol& x, const std::string& point, Ctx& ctx) {
  GiNaC::symbol t("t_limit");
  ex sub;
  bool at_infinity = false;
  if (point == "oo" || point == "inf" || point == "infinity" || point == "+oo") {
    sub = e.subs(x == 1 / t);
    at_infinity = true;
  } else if (point == "-oo" || point == "-inf" || point == "-infinity") {
    sub = e.subs(x == -1 / t);
    at_infinity = true;
  } else {
    ALLOT_ASSIGN_OR_RETURN(ex a, Parse(ctx, point));
    if (!GiNaC::is_a<GiNaC::numeric>(a.evalf())) {
      return InvalidArgument("parameters.point must be a number or oo");
    }
    sub = e.subs(x == a + t);
  }
  const ex series = sub.series(t == 0, 6);
  const ex poly = GiNaC::series_to_poly(series);
  const int low = poly.ldegree(t);
  if (low > 0) return json{{"result", "0"}};
  const ex lead = poly.coeff(t, low).normal();
  if (low == 0) return Value(lead);
  // A pole: +-oo when the sign agrees from both sides, otherwise no two-sided limit.
  const ex lead_num = lead.evalf();
  if (!GiNaC::is_a<GiNaC::numeric>(lead_num) || !GiNaC::ex_to<GiNaC::numeric>(lead_num).is_real()) {
    return InvalidArgument("the limit is infinite (sign undetermined)");
  }
  const bool positive = GiNaC::ex_to<GiNaC::numeric>(lead_num).is_positive();
  if (at_infinity || (-low) % 2 == 0) return json{{"result", positive ? "oo" : "-oo"}};
  return json{{"result", "does not exist"},
              {"left", positive ? "-oo" : "oo"},
              {"right", positive ? "oo" : "-oo"}};
}

}  // namespace

Status RegisterSymbolicTools(ToolRegistry& registry, const math::EvalLimits& limits) {
  // Each call gets a fresh symbol table: "x" in one call is unrelated to "x" in the next.
  auto unary = [&](const std::string& name, const std::string& doc, auto op) -> Status {
    return Add(registry,
               {name,
                "symbolic",
                doc,
                ObjectSchema({{"expression", Expression("e.g. (x^2-1)/(x-1)")}}, {"expression"}),
                {json{{"expression", "(x^2 - 1)/(x - 1)"}}}},
               [limits, op](const json& p) -> Result<json> {
                 Ctx ctx{{}, limits};
                 ALLOT_ASSIGN_OR_RETURN(ex e, Parse(ctx, p["expression"].get<std::string>()));
                 if (GiNaC::is_a<GiNaC::relational>(e)) {
                   return InvalidArgument("expected an expression, not an equation");
                 }
                 ALLOT_RETURN_IF_ERROR(CheckExpandable(e, limits));
                 return Value(op(e));
               });
  };
  ALLOT_RETURN_IF_ERROR(unary("simplify", "Simplifies an expression (rational normal form).",
                              [](const ex& e) { return e.normal(); }));
  ALLOT_RETURN_IF_ERROR(unary("expand", "Expands products and powers of sums.",
                              [](const ex& e) { return e.expand(); }));
  ALLOT_RETURN_IF_ERROR(unary("factor", "Factors a polynomial over the rationals.",
                              [](const ex& e) { return GiNaC::factor(e.normal()); }));

  ALLOT_RETURN_IF_ERROR(Add(
      registry,
      {"solve",
       "symbolic",
       "Solves one polynomial equation in one variable (exact roots where possible) or a "
       "system of linear equations. Write equations with '='; a bare expression means '= 0'.",
       ObjectSchema(
           {{"equations",
             {{"type", "array"},
              {"items", Expression("e.g. 2*x + y = 3")},
              {"minItems", 1},
              {"maxItems", 12}}},
            {"variables", {{"type", "array"}, {"items", {{"type", "string"}}}, {"maxItems", 12}}}},
           {"equations"}),
       {json{{"equations", {"x^2 - 5*x + 6 = 0"}}, {"variables", {"x"}}},
        json{{"equations", {"x + y = 3", "x - y = 1"}}}}},
      [limits](const json& p) -> Result<json> {
        Ctx ctx{{}, limits};
        GiNaC::lst eqs;
        for (const auto& eq : p["equations"]) {
          ALLOT_ASSIGN_OR_RETURN(ex e, Parse(ctx, eq.get<std::string>()));
          if (GiNaC::is_a<GiNaC::lst>(e)) return InvalidArgument("an equation cannot be a list");
          eqs.append(GiNaC::is_a<GiNaC::relational>(e) ? e : ex(e == 0));
        }
        GiNaC::lst vars;
        if (p.contains("variables") && !p["variables"].empty()) {
          for (const auto& v : p["variables"]) {
            ALLOT_ASSIGN_OR_RETURN(GiNaC::symbol s, Variable(ctx, v.get<std::string>()));
            vars.append(s);
          }
        } else {
          vars = ctx.symbols.AsList();
        }
        if (vars.nops() == 0) return InvalidArgument("the equations have no variables");
        // One equation in one unknown of degree >= 2: polynomial roots.
        if (eqs.nops() == 1 && vars.nops() == 1) {
          const GiNaC::symbol& x = GiNaC::ex_to<GiNaC::symbol>(vars.op(0));
          const ex diff = (eqs.op(0).lhs() - eqs.op(0).rhs());
          ALLOT_RETURN_IF_ERROR(CheckExpandable(diff, limits));
          const ex numer = diff.normal().numer();
          if (numer.is_polynomial(x) && numer.expand().degree(x) >= 2) {
            return PolynomialRoots(numer, x, limits);
          }
        }
        for (size_t i = 0; i < eqs.nops(); ++i) {
          const ex d = (eqs.op(i).lhs() - eqs.op(i).rhs());
          ALLOT_RETURN_IF_ERROR(CheckExpandable(d, limits));
          for (size_t k = 0; k < vars.nops(); ++k) {
            if (!d.expand().is_polynomial(vars.op(k)) || d.expand().degree(vars.op(k)) > 1) {
              return InvalidArgument("equation " + std::to_string(i + 1) + " is not linear in " +
                                     math::GinacToString(vars.op(k)) +
                                     "; only linear systems and single polynomial equations "
                                     "are supported");
            }
          }
        }
        const ex sol = GiNaC::lsolve(eqs, vars);
        if (!GiNaC::is_a<GiNaC::lst>(sol) || sol.nops() == 0) {
          return json{{"solutions", json::array()}, {"note", "no solution"}};
        }
        json out = json::object();
        for (size_t i = 0; i < sol.nops(); ++i) {
          out[math::GinacToString(sol.op(i).lhs())] = math::GinacToString(sol.op(i).rhs().normal());
        }
        return json{{"solutions", json::array({out})}};
      }));

  ALLOT_RETURN_IF_ERROR(
      Add(registry,
          {"differentiate",
           "symbolic",
           "Derivative of an expression with respect to a variable.",
           ObjectSchema({{"expression", Expression("e.g. x^3*sin(x)")},
                         {"variable", {{"type", "string"}}},
                         {"order", {{"type", "integer"}, {"minimum", 1}, {"maximum", 16}}}},
                        {"expression"}),
           {json{{"expression", "x^3*sin(x)"}, {"variable", "x"}}}},
          [limits](const json& p) -> Result<json> {
            Ctx ctx{{}, limits};
            ALLOT_ASSIGN_OR_RETURN(ex e, Parse(ctx, p["expression"].get<std::string>()));
            ALLOT_ASSIGN_OR_RETURN(GiNaC::symbol x, PickVariable(ctx, p, "variable"));
            return Value(e.diff(x, static_cast<unsigned>(p.value("order", 1))));
          }));

  ALLOT_RETURN_IF_ERROR(
      Add(registry,
          {"integrate",
           "symbolic",
           "Integral of an expression: the antiderivative of a polynomial, or a definite integral "
           "between 'lower' and 'upper' (numeric when no closed form is found).",
           ObjectSchema({{"expression", Expression("e.g. 3*x^2 + 1")},
                         {"variable", {{"type", "string"}}},
                         {"lower", {{"type", json::array({"number", "string"})}}},
                         {"upper", {{"type", json::array({"number", "string"})}}}},
                        {"expression"}),
           {json{{"expression", "3*x^2 + 1"}, {"variable", "x"}, {"lower", 0}, {"upper", 2}}}},
          [limits](const json& p) -> Result<json> {
            Ctx ctx{{}, limits};
            ALLOT_ASSIGN_OR_RETURN(ex e, Parse(ctx, p["expression"].get<std::string>()));
            ALLOT_ASSIGN_OR_RETURN(GiNaC::symbol x, PickVariable(ctx, p, "variable"));
            if (p.contains("lower") != p.contains("upper")) {
              return InvalidArgument("parameters: give both 'lower' and 'upper', or neither");
            }
            if (!p.contains("lower")) {
              ALLOT_RETURN_IF_ERROR(CheckExpandable(e, limits));
              const ex poly = e.expand();
              if (!poly.is_polynomial(x)) {
                return InvalidArgument("antiderivatives are only supported for polynomials in " +
                                       x.get_name());
              }
              ex out = 0;
              for (int k = poly.ldegree(x); k <= poly.degree(x); ++k) {
                out += poly.coeff(x, k) * GiNaC::pow(x, k + 1) / (k + 1);
              }
              return Value(out);
            }
            auto bound = [&](const json& v) {
              return Parse(ctx, v.is_string() ? v.get<std::string>() : v.dump());
            };
            ALLOT_ASSIGN_OR_RETURN(ex lo, bound(p["lower"]));
            ALLOT_ASSIGN_OR_RETURN(ex hi, bound(p["upper"]));
            const ex integral = GiNaC::integral(x, lo, hi, e).eval_integ();
            if (!GiNaC::has(integral, GiNaC::integral(x, lo, hi, e)) &&
                !GiNaC::is_a<GiNaC::integral>(integral)) {
              return Value(integral.normal());
            }
            ALLOT_ASSIGN_OR_RETURN(std::string dec, math::GinacToDecimal(integral));
            return json{{"result", dec}, {"numeric", true}};
          }));

  ALLOT_RETURN_IF_ERROR(
      Add(registry,
          {"series",
           "symbolic",
           "Taylor/Laurent series of an expression around a point.",
           ObjectSchema({{"expression", Expression("e.g. exp(x)")},
                         {"variable", {{"type", "string"}}},
                         {"point", {{"type", json::array({"number", "string"})}}},
                         {"order", {{"type", "integer"}, {"minimum", 1}, {"maximum", 20}}}},
                        {"expression"}),
           {json{{"expression", "exp(x)"}, {"variable", "x"}, {"point", 0}, {"order", 4}}}},
          [limits](const json& p) -> Result<json> {
            Ctx ctx{{}, limits};
            ALLOT_ASSIGN_OR_RETURN(ex e, Parse(ctx, p["expression"].get<std::string>()));
            ALLOT_ASSIGN_OR_RETURN(GiNaC::symbol x, PickVariable(ctx, p, "variable"));
            ex point = 0;
            if (p.contains("point")) {
              const json& v = p["point"];
              ALLOT_ASSIGN_OR_RETURN(point,
                                     Parse(ctx, v.is_string() ? v.get<std::string>() : v.dump()));
            }
            const ex s = e.series(x == point, p.value("order", 6));
            return json{{"result", math::GinacToString(GiNaC::series_to_poly(s))},
                        {"order", p.value("order", 6)}};
          }));

  ALLOT_RETURN_IF_ERROR(
      Add(registry,
          {"limit",
           "symbolic",
           "Limit of an expression as the variable approaches a point (a number, oo or -oo).",
           ObjectSchema({{"expression", Expression("e.g. sin(x)/x")},
                         {"variable", {{"type", "string"}}},
                         {"point", {{"type", json::array({"number", "string"})}}}},
                        {"expression", "point"}),
           {json{{"expression", "sin(x)/x"}, {"variable", "x"}, {"point", 0}}}},
          [limits](const json& p) -> Result<json> {
            Ctx ctx{{}, limits};
            ALLOT_ASSIGN_OR_RETURN(ex e, Parse(ctx, p["expression"].get<std::string>()));
            ALLOT_ASSIGN_OR_RETURN(GiNaC::symbol x, PickVariable(ctx, p, "variable"));
            const json& v = p["point"];
            return Limit(e, x, v.is_string() ? v.get<std::string>() : v.dump(), ctx);
          }));

  ALLOT_RETURN_IF_ERROR(
      Add(registry,
          {"substitute",
           "symbolic",
           "Substitutes values (numbers or expressions) for variables and evaluates.",
           ObjectSchema({{"expression", Expression("e.g. n^3 - 9*n^2 + 23*n - 21")},
                         {"values", {{"type", "object"}}}},
                        {"expression", "values"}),
           {json{{"expression", "n^3 - 9*n^2 + 23*n - 21"}, {"values", {{"n", 5}}}}}},
          [limits](const json& p) -> Result<json> {
            Ctx ctx{{}, limits};
            ALLOT_ASSIGN_OR_RETURN(ex e, Parse(ctx, p["expression"].get<std::string>()));
            GiNaC::lst subs;
            for (const auto& [name, v] : p["values"].items()) {
              if (!v.is_number() && !v.is_string()) {
                return InvalidArgument("parameters.values." + name + ": expected number or string");
              }
              ALLOT_ASSIGN_OR_RETURN(GiNaC::symbol s, Variable(ctx, name));
              ALLOT_ASSIGN_OR_RETURN(ex val,
                                     Parse(ctx, v.is_string() ? v.get<std::string>() : v.dump()));
              subs.append(s == val);
            }
            const ex r = e.subs(subs);
            ALLOT_RETURN_IF_ERROR(CheckExpandable(r, limits));
            return Value(r.normal());
          }));

  auto matrix_tool = [&](const std::string& name, const std::string& doc, bool two,
                         auto op) -> Status {
    json props{{"matrix", MatrixSchema()}};
    json required{"matrix"};
    json example{{"matrix", {{1, 2}, {3, 4}}}};
    if (two) {
      props = {{"a", MatrixSchema()}, {"b", MatrixSchema()}};
      required = {"a", "b"};
      example = {{"a", {{1, 2}, {3, 4}}}, {"b", {{0, 1}, {1, 0}}}};
    }
    return Add(registry, {name, "symbolic", doc, ObjectSchema(props, required), {example}},
               [limits, two, op](const json& p) -> Result<json> {
                 Ctx ctx{{}, limits};
                 ALLOT_ASSIGN_OR_RETURN(
                     ex a, ParseMatrix(ctx, two ? p["a"] : p["matrix"], two ? "a" : "matrix"));
                 ex b;
                 if (two) {
                   ALLOT_ASSIGN_OR_RETURN(b, ParseMatrix(ctx, p["b"], "b"));
                 }
                 return op(ctx, GiNaC::ex_to<GiNaC::matrix>(a),
                           two ? GiNaC::ex_to<GiNaC::matrix>(b) : GiNaC::matrix());
               });
  };
  auto square = [](const GiNaC::matrix& m) -> Status {
    if (m.rows() != m.cols()) return InvalidArgument("the matrix must be square");
    return Status::Ok();
  };
  ALLOT_RETURN_IF_ERROR(
      matrix_tool("matrix_determinant", "Determinant of a square matrix.", false,
                  [square](Ctx&, const GiNaC::matrix& m, const GiNaC::matrix&) -> Result<json> {
                    ALLOT_RETURN_IF_ERROR(square(m));
                    return Value(m.determinant().normal());
                  }));
  ALLOT_RETURN_IF_ERROR(
      matrix_tool("matrix_inverse", "Inverse of a square matrix.", false,
                  [square](Ctx&, const GiNaC::matrix& m, const GiNaC::matrix&) -> Result<json> {
                    ALLOT_RETURN_IF_ERROR(square(m));
                    if (m.determinant().normal().is_zero())
                      return InvalidArgument("the matrix is singular");
                    return json{{"result", MatrixJson(m.inverse())}};
                  }));
  ALLOT_RETURN_IF_ERROR(matrix_tool(
      "matrix_multiply", "Matrix product a*b.", true,
      [](Ctx&, const GiNaC::matrix& a, const GiNaC::matrix& b) -> Result<json> {
        if (a.cols() != b.rows()) {
          return InvalidArgument("shapes do not match: a is " + std::to_string(a.rows()) + "x" +
                                 std::to_string(a.cols()) + ", b is " + std::to_string(b.rows()) +
                                 "x" + std::to_string(b.cols()));
        }
        return json{{"result", MatrixJson(a.mul(b))}};
      }));
  ALLOT_RETURN_IF_ERROR(matrix_tool(
      "matrix_eigenvalues",
      "Eigenvalues of a square matrix (roots of its characteristic "
      "polynomial, with multiplicities).",
      false, [square, limits](Ctx&, const GiNaC::matrix& m, const GiNaC::matrix&) -> Result<json> {
        ALLOT_RETURN_IF_ERROR(square(m));
        GiNaC::symbol lambda("lambda");
        const ex charpoly = m.charpoly(lambda).expand();
        ALLOT_ASSIGN_OR_RETURN(json roots, PolynomialRoots(charpoly, lambda, limits));
        return json{{"eigenvalues", roots["roots"]},
                    {"characteristic_polynomial", math::GinacToString(charpoly)}};
      }));
  return Status::Ok();
}

}  // namespace allot::tools
