#include "envs/deeptool/deeptool_item.h"

#include <nlohmann/json.hpp>

namespace allot::envs::deeptool {
namespace {

using nlohmann::json;

// The steps under `key` at the top level of the item or under its "extra".
Result<std::vector<ExpertStep>> StepsOf(const json& j, const char* key) {
  const json* where = nullptr;
  if (auto it = j.find(key); it != j.end()) {
    where = &*it;
  } else if (auto e = j.find("extra"); e != j.end() && e->is_object() && e->contains(key)) {
    where = &(*e)[key];
  }
  if (where == nullptr || where->is_null()) return std::vector<ExpertStep>{};
  return ParseExpertSteps(*where, std::string("dataset_item.") + key);
}

}  // namespace

Result<DeepToolItem> ParseDeepToolItem(const std::string& text,
                                       rewards::AnswerFormat default_format) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument("dataset_item: not a JSON object");
  DeepToolItem item;
  auto str = [&](const char* key) -> std::string {
    auto it = j.find(key);
    if (it == j.end()) return "";
    if (it->is_string()) return it->get<std::string>();
    return it->is_number() ? it->dump() : "";
  };
  item.question = str("question");
  if (item.question.empty()) item.question = str("problem");
  if (item.question.empty()) return InvalidArgument("dataset_item.question: missing or empty");
  item.reference = str("answer");
  if (item.reference.empty()) return InvalidArgument("dataset_item.answer: missing or empty");
  if (auto it = j.find("options"); it != j.end() && it->is_array()) {
    for (size_t i = 0; i < it->size(); ++i) {
      if (!(*it)[i].is_string()) return InvalidArgument("dataset_item.options: not strings");
      item.question += (i == 0 ? "\n\n" : "\n") + std::string(1, static_cast<char>('A' + i)) +
                       ") " + (*it)[i].get<std::string>();
    }
  }
  item.format = default_format;
  if (std::string f = str("answer_format"); !f.empty() && f != "text") {
    Result<rewards::AnswerFormat> parsed = rewards::ParseAnswerFormat(f);
    if (!parsed.ok()) return parsed.status().Annotate("dataset_item.answer_format");
    item.format = *parsed;
  }
  ALLOT_ASSIGN_OR_RETURN(item.history, StepsOf(j, "history"));
  ALLOT_ASSIGN_OR_RETURN(item.reference_steps, StepsOf(j, "reference_steps"));
  ALLOT_ASSIGN_OR_RETURN(std::vector<ExpertStep> steps, StepsOf(j, "steps"));
  if (!steps.empty()) {
    if (!item.history.empty() || !item.reference_steps.empty()) {
      return InvalidArgument(
          "dataset_item.steps: give either a whole trajectory (steps) or an instance (history, "
          "reference_steps), not both");
    }
    item.reference_steps = std::move(steps);
  }
  if (!item.history.empty() && item.history.back().terminal) {
    return InvalidArgument("dataset_item.history: ends with the answer step; nothing is left");
  }
  return item;
}

}  // namespace allot::envs::deeptool
