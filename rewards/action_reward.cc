#include "rewards/action_reward.h"

#include <cctype>

#include "rewards/gestalt.h"
#include "rewards/text_util.h"

namespace allot::rewards {
namespace {

using text::Trim;

// Reads "<tag>body</tag>" at the start of `s`; advances `s` past it.
Result<std::string> Block(std::string_view& s, const std::string& tag) {
  const std::string open = "<" + tag + ">", close = "</" + tag + ">";
  s = Trim(s);
  if (s.substr(0, open.size()) != open) return InvalidArgument("expected " + open);
  size_t end = s.find(close);
  if (end == std::string_view::npos) return InvalidArgument(open + " is not closed");
  std::string body(Trim(s.substr(open.size(), end - open.size())));
  s.remove_prefix(end + close.size());
  return body;
}

}  // namespace

Result<ToolStep> ParseToolStep(std::string_view output, const ActionRewardConfig& config) {
  for (const std::string* tag : {&config.think_tag, &config.tool_tag, &config.answer_tag}) {
    if (text::CountOf(output, "<" + *tag + ">") > 1 ||
        text::CountOf(output, "</" + *tag + ">") > 1) {
      return InvalidArgument("step: more than one <" + *tag + "> block");
    }
  }
  std::string_view rest = output;
  ToolStep step;
  ALLOT_ASSIGN_OR_RETURN(step.think, Block(rest, config.think_tag));
  std::string_view after = Trim(rest);
  const std::string answer_open = "<" + config.answer_tag + ">";
  step.terminal = after.substr(0, answer_open.size()) == answer_open;
  Result<std::string> action = Block(rest, step.terminal ? config.answer_tag : config.tool_tag);
  if (!action.ok()) {
    return InvalidArgument("step: after the thought, " + action.status().message() + " or <" +
                           config.answer_tag + ">");
  }
  step.action = std::move(*action);
  if (!Trim(rest).empty()) return InvalidArgument("step: text after the action block");
  if (step.action.empty()) return InvalidArgument("step: empty action");
  return step;
}

Result<double> ActionCentricReward::Compute(const RewardInput& input) const {
  Result<ToolStep> reference = ParseToolStep(input.reference_step, config_);
  if (!reference.ok()) return reference.status().Annotate("action reward: reference step");
  Result<ToolStep> step = ParseToolStep(input.response, config_);
  // Eq. 7: the gate is 1 only for a well-formed step of the reference's phase.
  if (!step.ok() || step->terminal != reference->terminal) return 0.0;
  const size_t cap = static_cast<size_t>(config_.max_action_chars);  // characters, as in Eq. 8
  const std::u32string a = DecodeCodePoints(step->action), b = DecodeCodePoints(reference->action);
  return GestaltSimilarity(std::u32string_view(a).substr(0, cap),
                           std::u32string_view(b).substr(0, cap));  // Eq. 8
}

}  // namespace allot::rewards
