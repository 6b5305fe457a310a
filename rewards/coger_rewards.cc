#include "rewards/coger_rewards.h"

#include <algorithm>
#include <cctype>

#include "rewards/text_util.h"

namespace allot::rewards {
namespace {

using text::CountOf;
using text::Trim;

}  // namespace

Result<LevelTag> ParseLevelTag(std::string_view output, const FormatRewardConfig& config) {
  const size_t opens = CountOf(output, config.open_tag);
  const size_t closes = CountOf(output, config.close_tag);
  if (opens != 1 || closes != 1) {
    return InvalidArgument("level tag: expected one " + config.open_tag + " and one " +
                           config.close_tag + ", found " + std::to_string(opens) + " and " +
                           std::to_string(closes));
  }
  const size_t open = output.find(config.open_tag);
  const size_t close = output.find(config.close_tag);
  if (close < open) return InvalidArgument("level tag: closing tag before opening tag");
  std::string_view inner =
      Trim(output.substr(open + config.open_tag.size(), close - open - config.open_tag.size()));
  if (inner.size() != 2 || (inner[0] != 'L' && inner[0] != 'l') || inner[1] < '1' ||
      inner[1] > '0' + config.num_levels) {
    return InvalidArgument("level tag: '" + std::string(inner.substr(0, 40)) + "' is not L1..L" +
                           std::to_string(config.num_levels));
  }
  if (!Trim(output.substr(close + config.close_tag.size())).empty()) {
    return InvalidArgument("level tag: text after the tag");
  }
  LevelTag tag;
  tag.level = inner[1] - '0';
  std::string_view before = Trim(output.substr(0, open));
  if (tag.level == 1 && before.empty()) {
    return InvalidArgument("level tag: L1 without an answer before the tag");
  }
  if (tag.level > 1 && config.l2_plus_tag_only && !before.empty()) {
    return InvalidArgument("level tag: L" + std::to_string(tag.level) + " must be the tag alone");
  }
  tag.answer = std::string(before);
  return tag;
}

Result<double> FormatReward::Compute(const RewardInput& input) const {
  return ParseLevelTag(input.response, config_).ok() ? 1.0 : 0.0;
}

Result<double> AccuracyReward::Compute(const RewardInput& input) const {
  std::string_view answer = input.answer_text();
  // An L1 router output answers itself, before its tag (App. B.1).
  std::optional<std::string> l1;
  if (input.final_response.empty()) {
    Result<LevelTag> tag = ParseLevelTag(input.response, tags_);
    if (tag.ok() && tag->level == 1) answer = l1.emplace(tag->answer);
  }
  const AnswerFormat format = input.format.value_or(default_format_);
  return Grade(answer, input.reference, format, options_).correct ? 1.0 : 0.0;
}

Result<std::optional<int>> DatasetMinLevelOracle::MinLevel(const RewardInput& input) const {
  // A missing field must not read as "unsolvable" (a silent 0): the dataset is wrong.
  if (!input.min_level) return InvalidArgument("L_min oracle 'dataset': the item has no min_level");
  return input.min_level;
}

Result<std::optional<int>> OutcomeMinLevelOracle::MinLevel(const RewardInput& input) const {
  // No per-level outcomes means no oracle ran, not "no level solves it" (which would make the
  // hierarchy term silently 0).
  if (input.level_correct.empty()) {
    return InvalidArgument(
        "L_min oracle 'outcomes': the episode carries no per-level outcomes (level_correct); "
        "configure an oracle that produces them (the coger env's lmin solver) or 'dataset'");
  }
  for (size_t i = 0; i < input.level_correct.size(); ++i) {
    if (input.level_correct[i]) return std::optional<int>(static_cast<int>(i) + 1);
  }
  return std::optional<int>();
}

Result<std::optional<int>> SolvingMinLevelOracle::MinLevel(const RewardInput& input) const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cache_.find(input.question);
    if (it != cache_.end()) return it->second;
  }
  // Solved outside the lock: concurrent first calls for one question may both solve; the
  // results agree, and the cache keeps one.
  std::optional<int> found;
  for (int level = 1; level <= n_ && !found; ++level) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++calls_;
    }
    Result<bool> ok = solve_(input, level);
    if (!ok.ok()) return ok.status().Annotate("L_min oracle at L" + std::to_string(level));
    if (*ok) found = level;
  }
  std::lock_guard<std::mutex> lock(mu_);
  cache_.emplace(input.question, found);
  return found;
}

size_t SolvingMinLevelOracle::solve_calls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return calls_;
}

double HierarchyReward::Value(int level, int min_level) const {
  const double base = config_.base_slope * (min_level - 1);                       // Eq. 7
  const double penalty = config_.penalty_slope * std::max(level - min_level, 0);  // Eq. 8
  return base - penalty;                                                          // Eq. 6
}

Result<double> HierarchyReward::Compute(const RewardInput& input) const {
  Result<LevelTag> tag = ParseLevelTag(input.response, format_);
  if (!tag.ok()) return 0.0;
  if (oracle_ == nullptr) return Internal("hierarchy reward: no L_min oracle configured");
  ALLOT_ASSIGN_OR_RETURN(std::optional<int> min_level, oracle_->MinLevel(input));
  if (!min_level) return config_.unsolvable_value;
  if (*min_level < 1 || *min_level > format_.num_levels) {
    return InvalidArgument("hierarchy reward: L_min " + std::to_string(*min_level) +
                           " outside 1.." + std::to_string(format_.num_levels));
  }
  return Value(tag->level, *min_level);
}

}  // namespace allot::rewards
