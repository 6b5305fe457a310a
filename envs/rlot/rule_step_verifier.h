// A rule-based step verifier behind the PRM's interface (rewards::StepScorer), for the tiny
// world, where no trained PRM exists: it checks the arithmetic written in each step.
//
// Every "lhs = rhs" in a step whose two sides are arithmetic (numbers, + - * / ^ % and
// parentheses, read by the project's own parser and evaluated exactly, math/ginac_eval.h)
// is checked; a chain "a = b = c" checks each neighbouring pair. A step scores `correct` when
// every checked equation holds, `wrong` when one does not, and `unchecked` when it holds no
// arithmetic to check. Equations with words or symbols on a side ("x = 3") are not checked.
// Stateless and thread-safe.
#pragma once

#include <string>
#include <vector>

#include "core/config/schema.h"
#include "rewards/step_scorer.h"

namespace allot::envs::rlot {

struct RuleStepVerifierConfig {
  double correct = 1.0;
  double wrong = 0.0;
  double unchecked = 0.5;

  void Describe(config::Visitor& v) {
    v.Field("correct", correct, {.doc = "score of a step whose equations all hold"});
    v.Field("wrong", wrong, {.doc = "score of a step with a false equation"});
    v.Field("unchecked", unchecked, {.doc = "score of a step with no arithmetic to check"});
  }
};

struct StepCheck {
  int checked = 0;  // equations whose two sides are arithmetic
  int wrong = 0;    // of those, the ones that do not hold
};

// The equations of one step and how many hold.
StepCheck CheckStepArithmetic(const std::string& step);

class RuleStepVerifier : public rewards::StepScorer {
 public:
  explicit RuleStepVerifier(RuleStepVerifierConfig config = {}) : config_(config) {}
  Result<std::vector<double>> StepScores(const std::string& question,
                                         const std::vector<std::string>& steps) const override;

 private:
  RuleStepVerifierConfig config_;
};

}  // namespace allot::envs::rlot
