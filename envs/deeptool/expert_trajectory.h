// A DeepTool trajectory as data (DeepTool Sec. 2.1 "Problem Definition", Sec. 2.2 Schema 1-2):
// a query, its reference answer and steps (think_k, action_k, observation_k). An intermediate
// step's action is code and its observation the interpreter's output; the terminal step's
// action is the answer and it has no observation.
//
// JSON, one trajectory per line of an expert JSONL file:
//   {"id": "...", "question": "...", "answer": "...",
//    "steps": [{"think": "...", "code": "...", "observation": "..."},
//              {"think": "...", "answer": "..."}]}
// A step may carry "perturbation": "intrinsic" | "extrinsic" (written by MOSAIC, mosaic.h).
//
// Rendered text (the tags of rewards::ActionRewardConfig plus the observation tag):
//   <think>
//   ...
//   </think>
//   <code>
//   ...
//   </code>
//   <observation>
//   ...
//   </observation>
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "rewards/action_reward.h"

namespace allot::envs::deeptool {

struct ExpertStep {
  std::string think;
  std::string action;  // code, or the answer when terminal
  bool terminal = false;
  std::string observation;   // intermediate steps only
  std::string perturbation;  // "", "intrinsic" or "extrinsic"
};

struct ExpertTrajectory {
  std::string id;
  std::string question;
  std::string answer;
  std::vector<ExpertStep> steps;
  nlohmann::json extra = nlohmann::json::object();  // other keys of the line, kept as they are
};

// `where` names the line or field in errors. Only the last step may be terminal; a step has
// exactly one of "code" and "answer".
Result<ExpertStep> ParseExpertStep(const nlohmann::json& j, const std::string& where);
Result<std::vector<ExpertStep>> ParseExpertSteps(const nlohmann::json& j, const std::string& where);
Result<ExpertTrajectory> ParseExpertTrajectory(const nlohmann::json& j, const std::string& where);

nlohmann::json StepToJson(const ExpertStep& step);
nlohmann::json StepsToJson(const std::vector<ExpertStep>& steps);
nlohmann::json TrajectoryToJson(const ExpertTrajectory& t);

// "<think>\n...\n</think>\n<code>\n...\n</code>" (or <answer>): what the policy writes.
std::string RenderStepAction(const ExpertStep& step, const rewards::ActionRewardConfig& tags);
// "\n<observation>\n...\n</observation>\n": what the environment splices in after code.
std::string RenderObservation(const std::string& observation, const std::string& tag);
// Every step with its observation, as the context of the next step (Eq. 5's history).
std::string RenderHistory(const std::vector<ExpertStep>& steps,
                          const rewards::ActionRewardConfig& tags, const std::string& obs_tag);

}  // namespace allot::envs::deeptool
