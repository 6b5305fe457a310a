#include "rewards/cost_reward.h"

#include <cmath>

namespace allot::rewards {
namespace {

Result<double> Scaled(double amount, double scale, const char* what) {
  if (!std::isfinite(amount) || amount < 0) {
    return InvalidArgument(std::string("cost reward: ") + what + " is " + std::to_string(amount));
  }
  if (scale <= 0) return InvalidArgument(std::string("cost reward: ") + what + " scale <= 0");
  return -amount / scale;
}

}  // namespace

double EstimateEnergyJoules(double num_params, int64_t tokens, double tdp_watts,
                            double peak_flops) {
  return 2.0 * num_params * static_cast<double>(tokens) * (tdp_watts / peak_flops);
}

CostUsage CostUsageFrom(const llm::UsageTotals& totals) {
  CostUsage u;
  u.cost_usd = totals.cost_usd;
  u.energy_joules = totals.energy_j;
  u.prompt_tokens = totals.prompt_tokens;
  u.completion_tokens = totals.completion_tokens;
  return u;
}

Result<double> ApiCostReward::Compute(const RewardInput& input) const {
  return Scaled(input.usage.cost_usd, config_.usd_scale, "cost_usd");
}

Result<double> EnergyReward::Compute(const RewardInput& input) const {
  return Scaled(input.usage.energy_joules, config_.joules_scale, "energy_joules");
}

Result<double> TokenReward::Compute(const RewardInput& input) const {
  return Scaled(static_cast<double>(input.usage.prompt_tokens + input.usage.completion_tokens),
                config_.tokens_scale, "tokens");
}

}  // namespace allot::rewards
