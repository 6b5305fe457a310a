// RLoT's five logic blocks (RLoT Sec. 3.2, Table 1) and their names: the one table every part
// of allot uses (the envs, the DQN metrics, navigator export and `allot eval`).
//
// The action index is the navigator's output index: 0 Reason-one-step, 1 Decompose, 2 Debate,
// 3 Refine, 4 Terminate (notes.md, from the first author's code).
#pragma once

#include <array>
#include <string>
#include <vector>

namespace allot::envs::rlot {

enum class LogicBlock : int {
  kReason = 0,
  kDecompose = 1,
  kDebate = 2,
  kRefine = 3,
  kTerminate = 4,
};

inline constexpr int kNumLogicBlocks = 5;
// The state: the 7-aspect self-evaluation A1 A2 A3 B1 B2 C1 C2 (RLoT Sec. 3.1, Table 2).
inline constexpr int kStateDim = 7;

inline constexpr std::array<const char*, kNumLogicBlocks> kLogicBlockNames = {
    "reason", "decompose", "debate", "refine", "terminate"};
inline constexpr std::array<const char*, kNumLogicBlocks> kLogicBlockTitles = {
    "Reason", "Decompose", "Debate", "Refine", "Terminate"};

// "reason", ... for 0..4; "other" outside.
inline const char* LogicBlockName(int action) {
  return action >= 0 && action < kNumLogicBlocks ? kLogicBlockNames[static_cast<size_t>(action)]
                                                 : "other";
}

// "Reason", ... for 0..4 (RLoT Table 5's spelling); "Other" outside.
inline const char* LogicBlockTitle(int action) {
  return action >= 0 && action < kNumLogicBlocks ? kLogicBlockTitles[static_cast<size_t>(action)]
                                                 : "Other";
}

// The names of a navigator's actions: the block names for 5 actions, "action_<i>" otherwise.
inline std::vector<std::string> ActionNames(int num_actions) {
  std::vector<std::string> names;
  for (int a = 0; a < num_actions; ++a) {
    names.push_back(num_actions == kNumLogicBlocks ? LogicBlockName(a)
                                                   : "action_" + std::to_string(a));
  }
  return names;
}

// "Decompose-Reason-Refine": the non-terminal blocks of an episode (RLoT Table 5's patterns).
inline std::string BlockPattern(const std::vector<int>& actions) {
  std::string out;
  for (int a : actions) {
    if (a == static_cast<int>(LogicBlock::kTerminate)) continue;
    if (!out.empty()) out += "-";
    out += LogicBlockTitle(a);
  }
  return out;
}

}  // namespace allot::envs::rlot
