#include "envs/atlas/solver_report.h"

#include <cctype>
#include <cstdlib>

namespace allot::envs::atlas {
namespace {

std::string Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

// The last line-start occurrence of `label`, or npos.
size_t LastLabel(std::string_view text, std::string_view label) {
  size_t found = std::string_view::npos;
  for (size_t p = text.find(label); p != std::string_view::npos; p = text.find(label, p + 1)) {
    if (p == 0 || text[p - 1] == '\n') found = p;
  }
  return found;
}

std::string Cut(const std::string& s, int chars) {
  if (chars <= 0) return "";
  if (s.size() <= static_cast<size_t>(chars)) return s;
  return s.substr(0, static_cast<size_t>(chars)) + " [...]";
}

}  // namespace

SolverReport ParseSolverReply(std::string_view text) {
  SolverReport r;
  const size_t approach = LastLabel(text, "Approach:");
  const size_t reasoning = LastLabel(text, "Reasoning:");
  const size_t answer = LastLabel(text, "Answer:");
  const size_t confidence = LastLabel(text, "Confidence:");
  // Each field runs to the next label after it.
  auto field = [&](size_t at, size_t label_size) {
    size_t end = text.size();
    for (size_t other : {approach, reasoning, answer, confidence}) {
      if (other != std::string_view::npos && other > at && other < end) end = other;
    }
    return Trim(text.substr(at + label_size, end - at - label_size));
  };
  if (approach != std::string_view::npos) r.approach = field(approach, 9);
  if (answer != std::string_view::npos) r.answer = field(answer, 7);
  if (reasoning != std::string_view::npos) {
    r.reasoning = field(reasoning, 10);
  } else {
    size_t end = answer != std::string_view::npos ? answer : text.size();
    for (size_t other : {approach, confidence}) {
      if (other != std::string_view::npos && other < end) end = other;
    }
    r.reasoning = Trim(text.substr(0, end));
  }
  if (confidence != std::string_view::npos) {
    const std::string c = field(confidence, 11);
    char* end = nullptr;
    const double v = std::strtod(c.c_str(), &end);
    if (end != c.c_str()) {
      // "0.8" and "80" (or "80%") both mean 80.
      const double pct = v <= 1.0 && c.find('%') == std::string::npos ? v * 100.0 : v;
      if (pct >= 0.0 && pct <= 100.0) r.confidence = static_cast<int>(pct + 0.5);
    }
  }
  return r;
}

std::string RenderObservation(const SolverReport& r, int reasoning_chars) {
  std::string out =
      "Candidate " + std::to_string(r.index) + " (solver " + r.solver + ", effort " + r.effort;
  if (!r.strategy.empty()) out += ", strategy: " + r.strategy;
  out += ")\n";
  if (r.failed()) return out + "The solver failed: " + r.failure + "\n";
  out += "Approach: " + (r.approach.empty() ? std::string("(not given)") : r.approach) + "\n";
  out += "Answer: " + (r.answer.empty() ? std::string("(empty)") : r.answer) + "\n";
  out += "Confidence: " +
         (r.confidence < 0 ? std::string("(not given)") : std::to_string(r.confidence)) + "\n";
  const std::string reasoning = Cut(r.reasoning, reasoning_chars);
  if (!reasoning.empty()) out += "Reasoning: " + reasoning + "\n";
  return out;
}

std::string RenderCandidatePool(const std::vector<SolverReport>& pool, int reasoning_chars) {
  if (pool.empty()) return "(no candidates)\n";
  std::string out;
  for (const SolverReport& r : pool) out += RenderObservation(r, reasoning_chars) + "\n";
  return out;
}

}  // namespace allot::envs::atlas
