// The cost-constrained mode: maximise E[R] subject to E[c] <= B, where c is an episode's cost
// (dollars, joules or tokens) and B the budget per episode. Lagrangian relaxation gives the
// shaped reward
//   R'_i = R_i - lambda * c_i / B
// (c / B makes lambda unitless, so one step size serves dollars and joules alike), and lambda
// follows projected dual ascent on the constraint violation of each batch:
//   lambda <- max(0, lambda + eta * (mean(c) - B) / B).
// Over budget, lambda grows and the policy is pushed toward cheaper behaviour; under budget it
// shrinks to zero and the task reward alone remains. This is how a router (CogER, R2-Reasoner)
// trades accuracy for cost on purpose.
#pragma once

#include <vector>

namespace allot::trainer::grpo {

class LagrangeMultiplier {
 public:
  LagrangeMultiplier(double budget, double lr, double initial = 0.0)
      : budget_(budget), lr_(lr), lambda_(initial) {}

  // R - lambda * c / B for each episode (rewards unchanged when the budget is 0).
  std::vector<double> Shape(const std::vector<double>& rewards,
                            const std::vector<double>& costs) const;

  // One dual-ascent step on a batch's costs; returns the new lambda.
  double Update(const std::vector<double>& costs);

  double lambda() const { return lambda_; }
  void set_lambda(double lambda) { lambda_ = lambda; }
  double budget() const { return budget_; }
  // mean(c) / B - 1 of the last Update (positive: over budget).
  double last_violation() const { return last_violation_; }

 private:
  double budget_;
  double lr_;
  double lambda_;
  double last_violation_ = 0.0;
};

}  // namespace allot::trainer::grpo
