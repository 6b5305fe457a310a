// The tiny world's RLoT prompts (App. K wording shortened to one instruction line for
// byte-level models), with {{name}} placeholders (core/text_template.h). envs/rlot renders them
// from configs/prompts/tinyworld/rlot/<name>.txt, whose text equals these constants (tests
// compare them); sft_records.cc renders its RLoT records from the same strings with the same
// renderer, so training and the env send the same bytes. The env drops the trailing newline
// of a template file, so those records' prompts end at the instruction and their completions
// begin with the newline (the env trims replies).
//
// Values as the RLoT env sets them: {{steps}} is "Step i: <text>" lines or "(none yet)";
// {{subtasks}} "Subtask<i>: <text>" lines; {{results}} "Subtask<i>: <text>\nResult: <r>" lines or
// "(none yet)"; {{plans}} "Plan<i>: <text>" lines.
#pragma once

#include <array>
#include <string_view>

namespace allot::tinyworld {

struct RlotTemplate {
  std::string_view name;  // the env's template name (configs/prompts/rlot/<name>.txt)
  std::string_view text;
};

inline constexpr RlotTemplate kRlotReason = {"reason",
                                             "{{question}}\nReasoning so far:\n{{steps}}\n"
                                             "Reason one step.\n"};
inline constexpr RlotTemplate kRlotSelfEvaluate = {"self_evaluate",
                                                   "{{question}}\nReasoning so far:\n{{steps}}\n"
                                                   "Evaluate the newest step.\n"};
inline constexpr RlotTemplate kRlotRefine = {"refine",
                                             "{{question}}\nReasoning so far:\n{{steps}}\n"
                                             "Refine the newest step.\n"};
inline constexpr RlotTemplate kRlotDecomposeList = {"decompose_list",
                                                    "{{question}}\nReasoning so far:\n{{steps}}\n"
                                                    "Break the problem into subtasks.\n"};
inline constexpr RlotTemplate kRlotDecomposeSolve = {
    "decompose_solve",
    "{{question}}\nSubtasks:\n{{subtasks}}\nResults so far:\n{{results}}\n"
    "Solve the next subtask: {{subtask}}\n"};
inline constexpr RlotTemplate kRlotDecomposeSummarize = {"decompose_summarize",
                                                         "{{question}}\nResults:\n{{results}}\n"
                                                         "Summarize the subtasks.\n"};
inline constexpr RlotTemplate kRlotDebatePlans = {"debate_plans",
                                                  "{{question}}\nReasoning so far:\n{{steps}}\n"
                                                  "Propose three plans.\n"};
inline constexpr RlotTemplate kRlotDebateCompare = {"debate_compare",
                                                    "{{question}}\nReasoning so far:\n{{steps}}\n"
                                                    "{{plans}}\nChoose the most promising plan.\n"};
inline constexpr RlotTemplate kRlotDebateExecute = {"debate_execute",
                                                    "{{question}}\nReasoning so far:\n{{steps}}\n"
                                                    "Follow the plan: {{plan}}\n"};
inline constexpr RlotTemplate kRlotFinishCheck = {"finish_check",
                                                  "{{question}}\nReasoning so far:\n{{steps}}\n"
                                                  "Is the final answer reached? yes or no.\n"};
inline constexpr RlotTemplate kRlotTerminate = {"terminate",
                                                "{{question}}\nReasoning so far:\n{{steps}}\n"
                                                "Give the final answer.\n"};

inline constexpr std::array<RlotTemplate, 11> kRlotTemplates = {
    kRlotReason,         kRlotSelfEvaluate,       kRlotRefine,      kRlotDecomposeList,
    kRlotDecomposeSolve, kRlotDecomposeSummarize, kRlotDebatePlans, kRlotDebateCompare,
    kRlotDebateExecute,  kRlotFinishCheck,        kRlotTerminate};

}  // namespace allot::tinyworld
