// What one explore call returns (ATLAS; notes.md): the independent solver's answer, reasoning,
// approach and confidence, and how the orchestrator sees it (an Observation) and the
// integrator sees the pool.
//
// The solver is asked to end with
//   Approach: <one line naming the method>
//   Reasoning: <the work>
//   Answer: <final answer>
//   Confidence: <0-100>
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace allot::envs::atlas {

struct SolverReport {
  int index = 0;  // 1-based candidate number
  std::string solver;
  std::string effort;
  std::string strategy;
  std::string answer;
  std::string reasoning;
  std::string approach;
  int confidence = -1;  // 0..100; -1 when the solver gave none
  // A failed explore (endpoint error, timeout, cut-off output): kept in the pool, since the
  // page treats solver failure as evidence about the problem's difficulty.
  std::string failure;
  bool failed() const { return !failure.empty(); }
};

// Reads the four fields from a solver's reply. Without an "Answer:" line the answer is empty
// (an empty answer, which the orchestrator sees as such); without "Reasoning:" the whole text
// before "Answer:" is the reasoning.
SolverReport ParseSolverReply(std::string_view text);

// The Observation text of one candidate; its reasoning cut to `reasoning_chars`.
std::string RenderObservation(const SolverReport& report, int reasoning_chars);

// The whole pool, for the integrator ablation.
std::string RenderCandidatePool(const std::vector<SolverReport>& pool, int reasoning_chars);

}  // namespace allot::envs::atlas
