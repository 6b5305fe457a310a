#include "envs/atlas/explore_action.h"

#include <cctype>

#include <nlohmann/json.hpp>

namespace allot::envs::atlas {
namespace {

std::string Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

// The text after `label` up to the next line that starts another section (or the end).
std::string Section(std::string_view text, size_t at, std::string_view label) {
  size_t from = at + label.size();
  size_t end = text.size();
  for (std::string_view next : {"\nAction:", "\nFinal Answer:", "\nObservation:"}) {
    const size_t p = text.find(next, from);
    if (p != std::string_view::npos && p < end) end = p;
  }
  return Trim(text.substr(from, end - from));
}

// The position of `label` at the start of a line, or npos.
size_t LineStart(std::string_view text, std::string_view label) {
  for (size_t p = text.find(label); p != std::string_view::npos; p = text.find(label, p + 1)) {
    if (p == 0 || text[p - 1] == '\n') return p;
  }
  return std::string_view::npos;
}

}  // namespace

OrchestratorTurn ParseOrchestratorTurn(std::string_view text) {
  OrchestratorTurn t;
  const size_t thought = LineStart(text, "Thought:");
  if (thought != std::string_view::npos) t.thought = Section(text, thought, "Thought:");
  const size_t action = LineStart(text, "Action:");
  const size_t final = LineStart(text, "Final Answer:");
  if (action == std::string_view::npos && final == std::string_view::npos) {
    t.error = "no 'Action:' or 'Final Answer:' line";
    return t;
  }
  if (final != std::string_view::npos && (action == std::string_view::npos || final < action)) {
    t.kind = OrchestratorTurn::Kind::kFinal;
    t.final_answer = Section(text, final, "Final Answer:");
    return t;
  }
  const std::string body = Section(text, action, "Action:");
  if (body.rfind("explore", 0) != 0) {
    t.error = "the only action is explore, not '" + body.substr(0, 40) + "'";
    return t;
  }
  const std::string rest = Trim(std::string_view(body).substr(7));
  if (rest.empty() || rest == "()" || rest == "{}") {
    t.kind = OrchestratorTurn::Kind::kExplore;
    return t;
  }
  const size_t open = rest.find('{');
  const size_t close = rest.rfind('}');
  if (open == std::string::npos || close == std::string::npos || close < open) {
    t.error = "explore's arguments are not a JSON object";
    return t;
  }
  const nlohmann::json args =
      nlohmann::json::parse(rest.substr(open, close - open + 1), nullptr, false);
  if (args.is_discarded() || !args.is_object()) {
    t.error = "explore's arguments are not a JSON object";
    return t;
  }
  for (const auto& [key, value] : args.items()) {
    std::optional<std::string>* slot = key == "solver"     ? &t.explore.solver
                                       : key == "effort"   ? &t.explore.effort
                                       : key == "strategy" ? &t.explore.strategy
                                                           : nullptr;
    if (slot == nullptr) {
      t.error = "explore has no argument '" + key + "' (solver, effort, strategy)";
      return t;
    }
    if (!value.is_string()) {
      t.error = "explore's '" + key + "' must be a string";
      return t;
    }
    *slot = value.get<std::string>();
  }
  t.kind = OrchestratorTurn::Kind::kExplore;
  return t;
}

}  // namespace allot::envs::atlas
