// The orchestrator's turn format (ATLAS; notes.md): a ReAct-style Thought, then either its one
// action, explore, or its own final answer.
//
//   Thought: <why more evidence is or is not needed>
//   Action: explore {"solver": "<name>", "effort": "low|medium|high", "strategy": "<text>"}
//   ... or ...
//   Thought: <...>
//   Final Answer: <the answer the orchestrator writes itself>
//
// Every argument of explore is optional (`Action: explore` alone uses the defaults). The
// environment then appends "Observation: ..." with the solver's report.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace allot::envs::atlas {

struct ExploreArgs {
  std::optional<std::string> solver;
  std::optional<std::string> effort;
  std::optional<std::string> strategy;
};

struct OrchestratorTurn {
  enum class Kind { kExplore, kFinal, kMalformed };
  Kind kind = Kind::kMalformed;
  std::string thought;
  ExploreArgs explore;       // kExplore
  std::string final_answer;  // kFinal (may be empty: giving up is an answer)
  std::string error;         // kMalformed: what is wrong, shown to the orchestrator
};

// Reads one orchestrator turn. The first of "Action:" / "Final Answer:" decides; an action
// other than explore, or explore with arguments that are not a JSON object of strings, is
// malformed.
OrchestratorTurn ParseOrchestratorTurn(std::string_view text);

}  // namespace allot::envs::atlas
