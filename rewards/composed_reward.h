// The weighted composition of reward terms, configured in YAML:
//
//   rewards:
//     terms:                       # CogER Eq. 3 by default: format + accuracy + hierarchy
//       - {name: format, weight: 1.0}
//       - {name: accuracy, weight: 1.0}
//       - {name: hierarchy, weight: 1.0}
//     answer: {format: boxed, rel_tol: 1.0e-6}
//     hierarchy: {base_slope: 0.5, penalty_slope: 0.2, oracle: outcomes}
//     prm: {mode: completions, aggregate: last}
//
// total = sum_i weight_i * value_i; RewardBreakdown reports every value unweighted.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/config/schema.h"
#include "rewards/action_reward.h"
#include "rewards/coger_rewards.h"
#include "rewards/cost_reward.h"
#include "rewards/prm_reward.h"
#include "rewards/reward_term.h"

namespace allot::rewards {

struct RewardTermConfig {
  std::string name = "accuracy";
  double weight = 1.0;

  void Describe(config::Visitor& v) {
    v.Field("name", name,
            {.doc = "reward term",
             .choices = {"format", "accuracy", "hierarchy", "prm", "action", "api_cost", "energy",
                         "tokens"}});
    v.Field("weight", weight, {.doc = "weight in the total"});
  }
};

struct AnswerCheckConfig {
  std::string format = "boxed";
  std::string max_choice = "E";  // D for four-option datasets (MedQA)
  bool last_number_fallback = false;
  double rel_tol = 1e-6;
  int64_t max_input_chars = 8192;

  void Describe(config::Visitor& v) {
    v.Field("format", format,
            {.doc = "how answers are written, unless the episode names its dataset's format",
             .choices = {"boxed", "number", "choice", "yesno", "text"}});
    v.Field("max_choice", max_choice,
            {.doc = "last multiple-choice letter", .choices = {"B", "C", "D", "E", "F", "G", "H"}});
    v.Field("last_number_fallback", last_number_fallback,
            {.doc = "number format: take the last number when no marker is found (a guess)"});
    v.Field("rel_tol", rel_tol,
            {.doc = "relative tolerance for inexact values (exact rationals compare exactly)",
             .min = 0.0});
    v.Field("max_input_chars", max_input_chars,
            {.doc = "answers longer than this are never equivalent", .min = 1});
  }
  Result<GradeOptions> ToGradeOptions() const;
};

struct RewardConfig {
  std::vector<RewardTermConfig> terms = {{"format", 1.0}, {"accuracy", 1.0}, {"hierarchy", 1.0}};
  AnswerCheckConfig answer;
  FormatRewardConfig format;
  HierarchyRewardConfig hierarchy;
  PrmRewardConfig prm;
  ActionRewardConfig action;
  CostRewardConfig cost;

  void Describe(config::Visitor& v) {
    v.Field("terms", terms, {.doc = "weighted reward terms (default: CogER Eq. 3)"});
    v.Field("answer", answer, {.doc = "answer extraction and equivalence"});
    v.Field("format", format, {.doc = "CogER format reward (Eq. 4)"});
    v.Field("hierarchy", hierarchy, {.doc = "CogER hierarchy reward (Eq. 6-8)"});
    v.Field("prm", prm, {.doc = "Math-Shepherd-style process reward model (RLoT)"});
    v.Field("action", action, {.doc = "DeepTool action-centric process reward"});
    v.Field("cost", cost, {.doc = "API cost, energy and token terms (R2-Reasoner)"});
  }
};

// What some terms need from outside: the PRM endpoint, and the solver behind the "solver"
// L_min oracle.
struct RewardDeps {
  JsonTransport prm_transport;
  SolvingMinLevelOracle::SolveFn level_solver;
};

class ComposedReward {
 public:
  // InvalidArgument when a term is unknown or listed twice, or a dependency it needs is absent.
  static Result<std::unique_ptr<ComposedReward>> Create(const RewardConfig& config,
                                                        RewardDeps deps = {});

  // Every term's value and the weighted total; the first term that fails to compute fails the
  // whole, annotated with its name. Thread-safe.
  Result<RewardBreakdown> Compute(const RewardInput& input) const;

  size_t num_terms() const { return terms_.size(); }

 private:
  struct Weighted {
    std::unique_ptr<RewardTerm> term;
    double weight;
  };
  std::vector<Weighted> terms_;
  bool cost_when_correct_ = false;  // rewards.cost.when: correct
};

}  // namespace allot::rewards
