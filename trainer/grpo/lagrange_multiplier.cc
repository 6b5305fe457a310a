#include "trainer/grpo/lagrange_multiplier.h"

#include <algorithm>

namespace allot::trainer::grpo {

std::vector<double> LagrangeMultiplier::Shape(const std::vector<double>& rewards,
                                              const std::vector<double>& costs) const {
  std::vector<double> out = rewards;
  if (budget_ <= 0.0) return out;
  for (size_t i = 0; i < out.size() && i < costs.size(); ++i) {
    out[i] -= lambda_ * costs[i] / budget_;
  }
  return out;
}

double LagrangeMultiplier::Update(const std::vector<double>& costs) {
  if (budget_ <= 0.0 || costs.empty()) return lambda_;
  double sum = 0.0;
  for (double c : costs) sum += c;
  const double mean = sum / static_cast<double>(costs.size());
  last_violation_ = (mean - budget_) / budget_;
  lambda_ = std::max(0.0, lambda_ + lr_ * last_violation_);
  return lambda_;
}

}  // namespace allot::trainer::grpo
