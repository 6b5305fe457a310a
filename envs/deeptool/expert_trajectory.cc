#include "envs/deeptool/expert_trajectory.h"

namespace allot::envs::deeptool {
namespace {

using nlohmann::json;

Result<std::string> StringField(const json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end()) return InvalidArgument(where + "." + key + ": missing");
  if (!it->is_string()) return InvalidArgument(where + "." + key + ": not a string");
  return it->get<std::string>();
}

}  // namespace

Result<ExpertStep> ParseExpertStep(const json& j, const std::string& where) {
  if (!j.is_object()) return InvalidArgument(where + ": not an object");
  ExpertStep s;
  ALLOT_ASSIGN_OR_RETURN(s.think, StringField(j, "think", where));
  const bool has_code = j.contains("code"), has_answer = j.contains("answer");
  if (has_code == has_answer) {
    return InvalidArgument(where + ": needs exactly one of \"code\" and \"answer\"");
  }
  s.terminal = has_answer;
  ALLOT_ASSIGN_OR_RETURN(s.action, StringField(j, has_answer ? "answer" : "code", where));
  if (s.action.empty()) return InvalidArgument(where + ": empty action");
  if (j.contains("observation")) {
    if (s.terminal) return InvalidArgument(where + ".observation: an answer step has none");
    ALLOT_ASSIGN_OR_RETURN(s.observation, StringField(j, "observation", where));
  }
  if (j.contains("perturbation")) {
    ALLOT_ASSIGN_OR_RETURN(s.perturbation, StringField(j, "perturbation", where));
    if (s.perturbation != "intrinsic" && s.perturbation != "extrinsic") {
      return InvalidArgument(where + ".perturbation: '" + s.perturbation +
                             "' is neither intrinsic nor extrinsic");
    }
  }
  return s;
}

Result<std::vector<ExpertStep>> ParseExpertSteps(const json& j, const std::string& where) {
  if (!j.is_array()) return InvalidArgument(where + ": not a list of steps");
  std::vector<ExpertStep> out;
  for (size_t i = 0; i < j.size(); ++i) {
    ALLOT_ASSIGN_OR_RETURN(ExpertStep s,
                           ParseExpertStep(j[i], where + "[" + std::to_string(i) + "]"));
    if (!out.empty() && out.back().terminal) {
      return InvalidArgument(where + "[" + std::to_string(i) + "]: a step after the answer step");
    }
    out.push_back(std::move(s));
  }
  return out;
}

Result<ExpertTrajectory> ParseExpertTrajectory(const json& j, const std::string& where) {
  if (!j.is_object()) return InvalidArgument(where + ": not a JSON object");
  ExpertTrajectory t;
  if (auto it = j.find("id"); it != j.end())
    t.id = it->is_string() ? it->get<std::string>() : it->dump();
  ALLOT_ASSIGN_OR_RETURN(t.question, StringField(j, "question", where));
  if (auto it = j.find("answer"); it != j.end() && it->is_number()) {
    t.answer = it->dump();
  } else {
    ALLOT_ASSIGN_OR_RETURN(t.answer, StringField(j, "answer", where));
  }
  auto steps = j.find("steps");
  if (steps == j.end()) return InvalidArgument(where + ".steps: missing");
  ALLOT_ASSIGN_OR_RETURN(t.steps, ParseExpertSteps(*steps, where + ".steps"));
  if (t.steps.empty()) return InvalidArgument(where + ".steps: empty");
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() != "id" && it.key() != "question" && it.key() != "answer" && it.key() != "steps") {
      t.extra[it.key()] = it.value();
    }
  }
  return t;
}

json StepToJson(const ExpertStep& s) {
  json j = {{"think", s.think}};
  j[s.terminal ? "answer" : "code"] = s.action;
  if (!s.terminal) j["observation"] = s.observation;
  if (!s.perturbation.empty()) j["perturbation"] = s.perturbation;
  return j;
}

json StepsToJson(const std::vector<ExpertStep>& steps) {
  json out = json::array();
  for (const ExpertStep& s : steps) out.push_back(StepToJson(s));
  return out;
}

json TrajectoryToJson(const ExpertTrajectory& t) {
  json j = t.extra;
  j["id"] = t.id;
  j["question"] = t.question;
  j["answer"] = t.answer;
  j["steps"] = StepsToJson(t.steps);
  return j;
}

std::string RenderStepAction(const ExpertStep& s, const rewards::ActionRewardConfig& tags) {
  const std::string& tag = s.terminal ? tags.answer_tag : tags.tool_tag;
  return "<" + tags.think_tag + ">\n" + s.think + "\n</" + tags.think_tag + ">\n<" + tag + ">\n" +
         s.action + "\n</" + tag + ">";
}

std::string RenderObservation(const std::string& observation, const std::string& tag) {
  return "\n<" + tag + ">\n" + observation + "\n</" + tag + ">\n";
}

std::string RenderHistory(const std::vector<ExpertStep>& steps,
                          const rewards::ActionRewardConfig& tags, const std::string& obs_tag) {
  std::string out;
  for (const ExpertStep& s : steps) {
    out += RenderStepAction(s, tags);
    if (!s.terminal) out += RenderObservation(s.observation, obs_tag);
  }
  return out;
}

}  // namespace allot::envs::deeptool
