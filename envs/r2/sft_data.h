// The SFT data of R2-Reasoner's two roles (App. B), one JSONL line in, one example out:
//
//   decomposer (Eq. 2-5): {"question", "candidates": [{"subtasks": [...] | "text": "...",
//       "tokens": <M_eval tokens>, "incoherent_pairs": A, "correct": C(d)}, ...]}
//     -> d* by Eq. 4 as {"prompt": decomposer prompt, "completion": "Subtask 1: ..."}
//   allocator (Eq. 6-11): {"question", "answer", "subtasks": [...],
//       "logprobs": [[baseline token log-probs of subtask 1], ...] | "difficulty": [...]}
//       (or neither, with a baseline endpoint that answers each subtask; "results": [...], the
//       reference result of each subtask, lets its prompt show the earlier ones)
//     -> M_A* of the grouped search, Acc(M_A) = the env executing the allocation on the pool
//        and grading the integrated answer, as {"prompt": what the allocator reads,
//        "completion": "Subtask 1: difficulty 1, model ..."}
//
// The prompts are the env's own templates, so that the SFT policy and the RL policy read the
// same text.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "envs/r2/decomposition_score.h"
#include "envs/r2/grouped_search.h"
#include "envs/r2/r2_env.h"
#include "envs/r2/subtask_difficulty.h"

namespace allot::envs::r2 {

struct DecomposerExample {
  std::string prompt;
  std::string completion;
  size_t chosen = 0;  // index of d* among the candidates
  double score = 0.0;
  bool correct = false;
};

// `where` names the line ("file:line") in errors.
Result<DecomposerExample> DecomposerExampleFromLine(const std::string& line, const R2Env& env,
                                                    const DecompositionWeights& weights,
                                                    const std::string& where);

struct AllocatorExample {
  std::string prompt;
  std::string completion;
  std::vector<Difficulty> difficulty;
  SearchResult search;
};

// Runs the grouped search for one line; every Acc evaluation executes the allocation through
// `env` (real endpoint calls). A line with neither "logprobs" nor "difficulty" needs
// `baseline`: that endpoint answers each subtask (the subtask prompt, greedy) and the
// log-probs of its answer give the difficulty.
Result<AllocatorExample> AllocatorExampleFromLine(const std::string& line, const R2Env& env,
                                                  const DifficultyConfig& difficulty,
                                                  const GroupedSearchConfig& search,
                                                  const std::string& where,
                                                  const std::string& baseline = "");

// The log-probs of `baseline`'s greedy answer to subtask `index` of `subtasks`, its prompt
// showing the first `index` of `results` (none when `results` is shorter).
Result<std::vector<float>> BaselineLogprobs(const R2Env& env, const std::string& baseline,
                                            const std::string& question,
                                            const std::vector<std::string>& subtasks, size_t index,
                                            const std::vector<std::string>& results = {});

// {"prompt": ..., "completion": ...} as one JSON line (no newline).
std::string SftLine(const std::string& prompt, const std::string& completion);

}  // namespace allot::envs::r2
