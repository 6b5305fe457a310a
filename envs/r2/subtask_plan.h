// The two policy outputs of R2-Reasoner and their text formats (Sec. 4.1-4.2; notes.md):
//
//   decomposition (M_decomp):  Subtask 1: <text>          one numbered subtask per line;
//                              Subtask 2: <text>          "1." / "1)" / "### Subtask1:" also read
//   allocation (M_alloc):      Subtask 1: difficulty 2, model qwen2.5-1.5b
//                              Subtask 2: difficulty 4, model qwen2.5-72b
//
// Parsing is strict where a loose reading would train on garbage: subtasks numbered 1..k in
// order, every subtask assigned exactly once, models from the pool, difficulties in range.
// A malformed output is an InvalidArgument naming what is wrong (the env scores it 0).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace allot::envs::r2 {

struct Assignment {
  int64_t difficulty = 0;
  std::string model;  // an endpoint name of the pool
};

// {t^1..t^k}. Text before the first numbered line is ignored; unnumbered lines after one continue
// the subtask above.
Result<std::vector<std::string>> ParseSubtasks(std::string_view text, int64_t max_subtasks);

// M_A for k subtasks. Model names match the pool case-insensitively and come back as the pool
// spells them.
Result<std::vector<Assignment>> ParseAllocation(std::string_view text, size_t k,
                                                const std::vector<std::string>& pool,
                                                int64_t min_difficulty, int64_t max_difficulty);

// The canonical texts (what the SFT data tools write as targets, and what the allocator reads).
std::string FormatSubtasks(const std::vector<std::string>& subtasks);
std::string FormatAllocation(const std::vector<Assignment>& allocation);

}  // namespace allot::envs::r2
