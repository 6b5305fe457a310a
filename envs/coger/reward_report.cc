#include "envs/coger/reward_report.h"

#include <algorithm>
#include <sstream>

#include "rewards/action_reward.h"
#include "rewards/coger_rewards.h"
#include "rewards/gestalt.h"

namespace allot::envs::coger {

Result<std::vector<bool>> ParseLevelCorrect(const std::string& text) {
  std::vector<bool> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t b = item.find_first_not_of(" \t");
    size_t e = item.find_last_not_of(" \t");
    const std::string v = b == std::string::npos ? "" : item.substr(b, e - b + 1);
    if (v == "1" || v == "true") {
      out.push_back(true);
    } else if (v == "0" || v == "false") {
      out.push_back(false);
    } else {
      return InvalidArgument("--level-correct: '" + v + "' is not 0/1 (entry " +
                             std::to_string(out.size() + 1) + ")");
    }
  }
  if (out.empty()) return InvalidArgument("--level-correct: empty");
  return out;
}

Result<nlohmann::json> ExplainReward(rewards::RewardConfig config, const RewardReportRequest& req) {
  auto has_term = [&](const std::string& name) {
    return std::any_of(config.terms.begin(), config.terms.end(),
                       [&](const rewards::RewardTermConfig& t) { return t.name == name; });
  };
  const bool hierarchy = has_term("hierarchy");
  std::string lmin_source = "none";
  if (req.lmin && !req.level_correct.empty()) {
    return InvalidArgument("give --lmin or --level-correct, not both");
  }
  if (req.lmin) {
    config.hierarchy.oracle = "dataset";
    lmin_source = "--lmin";
  } else if (!req.level_correct.empty()) {
    if (static_cast<int>(req.level_correct.size()) != config.format.num_levels) {
      return InvalidArgument("--level-correct: " + std::to_string(req.level_correct.size()) +
                             " entries for " + std::to_string(config.format.num_levels) +
                             " levels");
    }
    config.hierarchy.oracle = "outcomes";
    lmin_source = "--level-correct";
  } else if (hierarchy) {
    return InvalidArgument(
        "the recipe's rewards have a hierarchy term: give --lmin N or --level-correct 0,1,1,1");
  }
  if (!req.format.empty()) config.answer.format = req.format;
  ALLOT_ASSIGN_OR_RETURN(std::unique_ptr<rewards::ComposedReward> reward,
                         rewards::ComposedReward::Create(config));
  rewards::RewardInput in;
  in.question = req.question;
  in.response = req.pred;
  in.final_response = req.final_answer;
  in.reference = req.gold;
  in.reference_step = req.gold;  // DeepTool: the expert's step that the action is scored against
  in.min_level = req.lmin;
  in.level_correct = req.level_correct;
  ALLOT_ASSIGN_OR_RETURN(rewards::RewardBreakdown b, reward->Compute(in));

  nlohmann::json out;
  out["total"] = b.total;
  nlohmann::json terms = nlohmann::json::array();
  for (const auto& t : config.terms) {
    const double v = b.values.at(t.name);
    terms.push_back(
        {{"name", t.name}, {"value", v}, {"weight", t.weight}, {"weighted", v * t.weight}});
  }
  out["terms"] = terms;
  if (has_term("format") || hierarchy) {
    Result<rewards::LevelTag> tag = rewards::ParseLevelTag(req.pred, config.format);
    if (tag.ok()) {
      out["level_tag"] = {{"level", tag->level}, {"answer_before_tag", tag->answer}};
    } else {
      out["level_tag"] = {{"error", tag.status().message()}};
    }
  }
  if (has_term("action")) {
    // DeepTool Eq. 8: the Gestalt similarity of the two actions, before the format gate.
    Result<rewards::ToolStep> step = rewards::ParseToolStep(req.pred, config.action);
    Result<rewards::ToolStep> reference = rewards::ParseToolStep(req.gold, config.action);
    nlohmann::json action;
    if (step.ok() && reference.ok()) {
      action["gestalt"] = rewards::GestaltSimilarity(step->action, reference->action);
      action["gate"] = step->terminal == reference->terminal;
    } else {
      action["gestalt"] = nullptr;
      action["error"] = step.ok() ? "--gold: " + reference.status().message()
                                  : "--pred: " + step.status().message();
    }
    out["action"] = action;
  }
  if (!hierarchy && lmin_source == "none") return out;  // no CogER oracle in this recipe
  if (req.lmin) {
    out["lmin"] = *req.lmin;
  } else if (!req.level_correct.empty()) {
    auto it = std::find(req.level_correct.begin(), req.level_correct.end(), true);
    out["lmin"] = it == req.level_correct.end()
                      ? nlohmann::json(nullptr)
                      : nlohmann::json(static_cast<int>(it - req.level_correct.begin()) + 1);
  } else {
    out["lmin"] = nullptr;
  }
  out["lmin_source"] = lmin_source;
  return out;
}

}  // namespace allot::envs::coger
