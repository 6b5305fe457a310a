// One episode's dataset item for the DeepTool env (deeptool_env.h): the query, the reference
// answer, and, for process supervision, the expert's steps (DeepTool Sec. 2.3.1, Eq. 5).
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "envs/deeptool/expert_trajectory.h"
#include "rewards/answer_extractor.h"

namespace allot::envs::deeptool {

// A dataset item (datasets/example_json.h) with "history"? and "reference_steps"?, or with
// "steps" (a whole expert trajectory: no history, every step a reference). The steps may also
// sit under "extra" (the grpo engine's items).
struct DeepToolItem {
  std::string question;
  std::string reference;
  rewards::AnswerFormat format = rewards::AnswerFormat::kBoxed;
  std::vector<ExpertStep> history;          // the ground-truth steps before this instance
  std::vector<ExpertStep> reference_steps;  // the expert's steps from here on
};
Result<DeepToolItem> ParseDeepToolItem(const std::string& json,
                                       rewards::AnswerFormat default_format);

}  // namespace allot::envs::deeptool
