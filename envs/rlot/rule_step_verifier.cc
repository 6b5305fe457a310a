#include "envs/rlot/rule_step_verifier.h"

#include <cctype>
#include <string_view>

#include "math/ginac_eval.h"

namespace allot::envs::rlot {
namespace {

bool Arithmetic(char c) {
  return std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == '+' || c == '-' ||
         c == '*' || c == '/' || c == '^' || c == '%' || c == '(' || c == ')' || c == ' ' ||
         c == ',';
}

// The arithmetic run ending just before `end` / starting at `begin`, trimmed; commas inside
// numbers ("1,000") are dropped. Empty when the run holds no digit.
std::string Side(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c != ',') out += c;
  }
  size_t b = 0, e = out.size();
  while (b < e && out[b] == ' ') ++b;
  while (e > b && (out[e - 1] == ' ' || out[e - 1] == '.')) --e;  // a sentence's full stop
  out = out.substr(b, e - b);
  bool digit = false;
  for (char c : out) digit = digit || std::isdigit(static_cast<unsigned char>(c));
  return digit ? out : std::string();
}

// Exact value of an arithmetic side; nullopt when it does not parse to a number.
std::optional<GiNaC::ex> Value(const std::string& side) {
  if (side.empty()) return std::nullopt;
  math::EvalLimits limits;
  limits.max_result_bits = 4096;
  auto v = math::ParseToGinac(side, nullptr, limits);
  if (!v.ok()) return std::nullopt;
  try {
    if (!GiNaC::is_a<GiNaC::numeric>(v->evalf())) return std::nullopt;
  } catch (...) {
    return std::nullopt;
  }
  return *v;
}

}  // namespace

StepCheck CheckStepArithmetic(const std::string& step) {
  auto ginac = math::LockGinac();  // episodes of one worker verify steps on several threads
  StepCheck check;
  // The positions of '=' that are plain equations (not "<=", ">=", "==", "!=").
  std::vector<size_t> eqs;
  for (size_t i = 0; i < step.size(); ++i) {
    if (step[i] != '=') continue;
    const char prev = i > 0 ? step[i - 1] : ' ';
    const char next = i + 1 < step.size() ? step[i + 1] : ' ';
    if (prev == '<' || prev == '>' || prev == '!' || prev == '=' || next == '=') continue;
    eqs.push_back(i);
  }
  for (size_t k = 0; k < eqs.size(); ++k) {
    const size_t at = eqs[k];
    size_t b = at;
    while (b > 0 && Arithmetic(step[b - 1])) --b;
    size_t e = at + 1;
    while (e < step.size() && Arithmetic(step[e])) ++e;
    const std::string lhs = Side(std::string_view(step).substr(b, at - b));
    const std::string rhs = Side(std::string_view(step).substr(at + 1, e - at - 1));
    auto l = Value(lhs);
    auto r = Value(rhs);
    if (!l || !r) continue;
    ++check.checked;
    bool equal = false;
    try {
      equal = GiNaC::ex(*l - *r).normal().is_zero();
    } catch (...) {
      equal = false;
    }
    if (!equal) ++check.wrong;
  }
  return check;
}

Result<std::vector<double>> RuleStepVerifier::StepScores(
    const std::string& /*question*/, const std::vector<std::string>& steps) const {
  if (steps.empty()) return InvalidArgument("step verifier: no steps");
  std::vector<double> scores;
  scores.reserve(steps.size());
  for (const std::string& s : steps) {
    const StepCheck c = CheckStepArithmetic(s);
    scores.push_back(c.checked == 0 ? config_.unchecked
                                    : (c.wrong > 0 ? config_.wrong : config_.correct));
  }
  return scores;
}

}  // namespace allot::envs::rlot
