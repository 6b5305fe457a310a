// R2-Reasoner's prompts (Sec. 4.1-4.4): the template slots and their placeholders, and the texts
// the env fills into them (earlier steps, the subtask list, results referenced by "#k").
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "envs/r2/r2_config.h"
#include "rewards/answer_extractor.h"

namespace allot::envs::r2 {

// Fills empty prompt texts from prompts.dir and checks every template's placeholders.
Status ResolvePrompts(R2Prompts& prompts);

// `subtask` with each "#k" (k = 1..results.size()) replaced by the answer of results[k-1] in
// `format` (its trimmed text when none is found): the subtask prompt's {{subtask_filled}}, so
// that "the output of subtask t^i can serve as input to the subsequent subtask" (Sec. 4.4 step
// 3) as a value. Any other "#" is kept.
std::string FillResults(const std::string& subtask, const std::vector<std::string>& results,
                        rewards::AnswerFormat format);

// "Step 1: <subtask>\nResult: <r_1>\n\n..." for the results so far; "(none)" before any.
std::string StepsText(const std::vector<std::string>& subtasks,
                      const std::vector<std::string>& results);

// "Subtask1: <t^1>\n..." for every subtask (the tiny world's solve_subtask layout).
std::string SubtaskListText(const std::vector<std::string>& subtasks);

// "Subtask1: <t^1>\nResult: <r_1>\n..." for the results so far, "(none yet)\n" before any.
std::string DoneText(const std::vector<std::string>& subtasks,
                     const std::vector<std::string>& results);

// "Step 1: <r_1>\n..." for every result (the tiny world's final-answer layout).
std::string ResultStepsText(const std::vector<std::string>& results);

// `s` without leading and trailing whitespace.
std::string Trimmed(std::string s);

}  // namespace allot::envs::r2
