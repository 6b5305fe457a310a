// CogER's composite reward (Sec. 4.3): R = R_format + R_accuracy + R_hierarchy (Eq. 3).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "core/config/schema.h"
#include "rewards/grader.h"
#include "rewards/reward_term.h"

namespace allot::rewards {

// The router's level tag, <question_level>Lk</question_level> (CogER App. B.1).
struct LevelTag {
  int level = 0;       // 1..4
  std::string answer;  // for L1: the text before the tag (the router's own answer)
};

struct FormatRewardConfig {
  std::string open_tag = "<question_level>";
  std::string close_tag = "</question_level>";
  int num_levels = 4;
  // App. B.1 asks for "the level only" at L2-L4; when true, any other text fails the format.
  bool l2_plus_tag_only = true;

  void Describe(config::Visitor& v) {
    v.Field("open_tag", open_tag, {.doc = "opening level tag (CogER App. B.1)"});
    v.Field("close_tag", close_tag, {.doc = "closing level tag"});
    v.Field("num_levels", num_levels, {.doc = "levels L1..Ln", .min = 1, .max = 9});
    v.Field("l2_plus_tag_only", l2_plus_tag_only,
            {.doc = "at L2 and above the output must be the tag alone"});
  }
};

// Parses and validates the tag: exactly one well-formed tag with Lk inside, k in 1..n, at the
// end of the output; for L1 an answer before it; for L2+ nothing else (when configured).
// InvalidArgument says what is wrong.
Result<LevelTag> ParseLevelTag(std::string_view output, const FormatRewardConfig& config = {});

// Eq. 4: +1 when all required fields appear in the correct order, else 0.
class FormatReward : public RewardTerm {
 public:
  explicit FormatReward(FormatRewardConfig config = {}) : config_(std::move(config)) {}
  std::string name() const override { return "format"; }
  Result<double> Compute(const RewardInput& input) const override;

 private:
  FormatRewardConfig config_;
};

// Eq. 5: +1 when the final answer is correct, else 0 (the grader of grader.h). The answer is
// read from RewardInput::final_response, or, when that is empty and the router chose L1, from
// the router's own answer before its tag.
class AccuracyReward : public RewardTerm {
 public:
  explicit AccuracyReward(GradeOptions options = {},
                          AnswerFormat default_format = AnswerFormat::kBoxed,
                          FormatRewardConfig tags = {})
      : options_(std::move(options)), default_format_(default_format), tags_(std::move(tags)) {}
  std::string name() const override { return "accuracy"; }
  Result<double> Compute(const RewardInput& input) const override;

 private:
  GradeOptions options_;
  AnswerFormat default_format_;
  FormatRewardConfig tags_;
};

// L_min, the smallest level that solves the query. The paper leaves it unspecified (notes.md);
// these are the pluggable readings. nullopt means no level solves it.
class MinLevelOracle {
 public:
  virtual ~MinLevelOracle() = default;
  virtual Result<std::optional<int>> MinLevel(const RewardInput& input) const = 0;
};

// L_min from the dataset (RewardInput::min_level); an item without one is an error.
class DatasetMinLevelOracle : public MinLevelOracle {
 public:
  Result<std::optional<int>> MinLevel(const RewardInput& input) const override;
};

// The lowest level whose outcome is correct, from RewardInput::level_correct (index 0 = L1).
// Empty outcomes are an error: a missing oracle never reads as an unsolvable query.
class OutcomeMinLevelOracle : public MinLevelOracle {
 public:
  Result<std::optional<int>> MinLevel(const RewardInput& input) const override;
};

// Runs the query at each level through `solve(input, level) -> correct?` from L1 upwards and
// caches the answer per question, so that a group of G rollouts pays once. Thread-safe.
class SolvingMinLevelOracle : public MinLevelOracle {
 public:
  using SolveFn = std::function<Result<bool>(const RewardInput& input, int level)>;
  SolvingMinLevelOracle(SolveFn solve, int num_levels) : solve_(std::move(solve)), n_(num_levels) {}
  Result<std::optional<int>> MinLevel(const RewardInput& input) const override;
  size_t solve_calls() const;

 private:
  SolveFn solve_;
  int n_;
  mutable std::mutex mu_;
  mutable std::map<std::string, std::optional<int>> cache_;
  mutable size_t calls_ = 0;
};

struct HierarchyRewardConfig {
  double base_slope = 0.5;     // Eq. 7: b(L_min) = 0.5 (L_min - 1)
  double penalty_slope = 0.2;  // Eq. 8: delta = 0.2 (L - L_min)_+
  std::string oracle = "outcomes";
  double unsolvable_value = 0.0;  // when no level solves the query (notes.md: 0)

  void Describe(config::Visitor& v) {
    v.Field("base_slope", base_slope, {.doc = "CogER Eq. 7 slope of the base credit"});
    v.Field("penalty_slope", penalty_slope, {.doc = "CogER Eq. 8 slope of the penalty"});
    v.Field("oracle", oracle,
            {.doc = "where L_min comes from: per-level outcomes of the episode, the dataset "
                    "field, or a solver run at each level (injected by the environment)",
             .choices = {"outcomes", "dataset", "solver"}});
    v.Field("unsolvable_value", unsolvable_value,
            {.doc = "hierarchy reward when no level solves the query"});
  }
};

// Eq. 6-8: R = b(L_min) - delta(L_min, L). 0 when the tag does not parse; unsolvable_value
// (default 0, notes.md) when no level solves the query.
class HierarchyReward : public RewardTerm {
 public:
  HierarchyReward(HierarchyRewardConfig config, FormatRewardConfig format,
                  std::shared_ptr<const MinLevelOracle> oracle)
      : config_(std::move(config)), format_(std::move(format)), oracle_(std::move(oracle)) {}
  std::string name() const override { return "hierarchy"; }
  Result<double> Compute(const RewardInput& input) const override;
  // The formula itself, for a chosen level and L_min.
  double Value(int level, int min_level) const;

 private:
  HierarchyRewardConfig config_;
  FormatRewardConfig format_;
  std::shared_ptr<const MinLevelOracle> oracle_;
};

}  // namespace allot::rewards
