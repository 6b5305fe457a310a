#include "envs/deeptool/deeptool_item.h"

#include "datasets/example_json.h"

namespace allot::envs::deeptool {
namespace {

// The steps under `key`, at the top level of the item or under its "extra" (both land in extra).
Result<std::vector<ExpertStep>> StepsOf(const datasets::Example& e, const char* key) {
  auto it = e.extra.find(key);
  if (it == e.extra.end() || it->is_null()) return std::vector<ExpertStep>{};
  return ParseExpertSteps(*it, e.source + ": " + key);
}

}  // namespace

Result<DeepToolItem> ParseDeepToolItem(const std::string& text,
                                       rewards::AnswerFormat default_format) {
  ALLOT_ASSIGN_OR_RETURN(datasets::Example e, datasets::ExampleFromJson(text));
  DeepToolItem item;
  item.question = e.PromptText();
  item.reference = e.answer;
  ALLOT_ASSIGN_OR_RETURN(item.format, rewards::ParseAnswerFormat(datasets::GradingFormat(
                                          e, rewards::AnswerFormatName(default_format))));
  ALLOT_ASSIGN_OR_RETURN(item.history, StepsOf(e, "history"));
  ALLOT_ASSIGN_OR_RETURN(item.reference_steps, StepsOf(e, "reference_steps"));
  ALLOT_ASSIGN_OR_RETURN(std::vector<ExpertStep> steps, StepsOf(e, "steps"));
  if (!steps.empty()) {
    if (!item.history.empty() || !item.reference_steps.empty()) {
      return InvalidArgument(
          e.source +
          ": field 'steps': give either a whole trajectory (steps) or an instance (history, "
          "reference_steps), not both");
    }
    item.reference_steps = std::move(steps);
  }
  if (!item.history.empty() && item.history.back().terminal) {
    return InvalidArgument(e.source +
                           ": field 'history': ends with the answer step; nothing is left");
  }
  return item;
}

}  // namespace allot::envs::deeptool
