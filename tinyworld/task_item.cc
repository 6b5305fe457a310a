#include "tinyworld/task_item.h"

#include "tinyworld/formats.h"

namespace allot::tinyworld {

std::vector<SolutionStep> TaskItem::AllSteps() const {
  std::vector<SolutionStep> all = steps;
  if (multiple_choice()) {
    SolutionStep s;
    s.subtask = "Find the option that holds the result.";
    s.text = value + " is option " + answer + ".";
    all.push_back(std::move(s));
  }
  return all;
}

std::string TaskItem::SolutionText() const {
  std::string out;
  int i = 1;
  for (const SolutionStep& s : AllSteps()) {
    out += StepLine(i++, s.text) + "\n";
    if (s.uses_tool()) out += ToolQuery(s.tool_query) + "\n" + ToolResult(s.tool_result) + "\n";
  }
  return out + FinalAnswer(answer);
}

nlohmann::json TaskItem::ToJson() const {
  // nlohmann::ordered_json would keep this order; the loader does not care, and json's sorted
  // keys make the bytes independent of insertion order.
  nlohmann::json j = {{"id", id},
                      {"question", question},
                      {"answer", answer},
                      {"answer_format", answer_format()},
                      {"solution", SolutionText()},
                      {"split", split},
                      {"kind", kind},
                      {"difficulty", difficulty},
                      {"min_level", min_level},
                      {"value", value}};
  if (multiple_choice()) j["choices"] = choices;
  if (!expression.empty()) j["expression"] = expression;
  if (!entity.empty()) {
    j["entity"] = entity;
    j["page_id"] = page_id;
  }
  return j;
}

}  // namespace allot::tinyworld
