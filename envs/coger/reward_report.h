// `allot reward`: every reward component of one given output under a recipe's reward config,
// as JSON, for debugging reward functions (CogER Eq. 3-8 and any other term that needs no
// endpoint).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "rewards/composed_reward.h"

namespace allot::envs::coger {

struct RewardReportRequest {
  std::string pred;          // the policy's output (CogER: the router's, with its level tag)
  std::string final_answer;  // CogER L2-L4: the downstream model's answer text (optional)
  std::string gold;          // the reference answer; DeepTool: the expert's step (think + action)
  std::string question;
  std::string format;               // empty = the recipe's rewards.answer.format
  std::optional<int> lmin;          // L_min given directly
  std::vector<bool> level_correct;  // or per-level outcomes, index 0 = L1
};

// Parses "0,1,1,1" (or "false,true,...") into per-level outcomes.
Result<std::vector<bool>> ParseLevelCorrect(const std::string& text);

// {"total": t, "terms": [{"name", "value", "weight", "weighted"}...], "level_tag": {...},
//  "action": {"gestalt": s, "gate": g}, "lmin": n | null, "lmin_source": "..."}. level_tag
// comes with a format or hierarchy term (CogER), lmin with a hierarchy term or an oracle given,
// action with an action term (DeepTool: `gold` is the expert's step, and gestalt the similarity
// of the two actions before the gate). A hierarchy term without --lmin or --level-correct is an
// error, never a silent 0.
Result<nlohmann::json> ExplainReward(rewards::RewardConfig config, const RewardReportRequest& req);

}  // namespace allot::envs::coger
