// Cost-aware reward terms: API cost, energy and tokens, from the endpoint client's accounting
// (R2-Reasoner Sec. 5.1: C_API in dollars, E in joules). Each is the negated amount divided by
// a scale, so that the composition's weight trades it against accuracy.
#pragma once

#include <cstdint>
#include <string>

#include "core/config/schema.h"
#include "llm/accounting.h"
#include "rewards/reward_term.h"

namespace allot::rewards {

struct CostRewardConfig {
  double usd_scale = 0.01;       // R2-Reasoner reports cost in cents: one cent -> -1
  double joules_scale = 1000.0;  // one kilojoule -> -1
  double tokens_scale = 1000.0;  // a thousand tokens -> -1
  // always: every episode's cost counts; correct: only the episodes the accuracy term grades
  // correct pay theirs (the others score 0 in these terms, as a wrong answer does in accuracy).
  std::string when = "always";

  void Describe(config::Visitor& v) {
    v.Field("usd_scale", usd_scale, {.doc = "dollars per unit of the api_cost term", .min = 0.0});
    v.Field("joules_scale", joules_scale,
            {.doc = "joules per unit of the energy term", .min = 0.0});
    v.Field("tokens_scale", tokens_scale,
            {.doc = "tokens per unit of the tokens term", .min = 0.0});
    v.Field("when", when,
            {.doc = "always: every episode pays its cost; correct: only correct ones (needs the "
                    "accuracy term), so that a policy cannot raise its reward by answering "
                    "nothing at no cost",
             .choices = {"always", "correct"}});
  }
};

// Energy of one call as R2-Reasoner estimates it: FLOPs = 2 * N_params * tokens (input plus
// output), times the energy per FLOP, TDP / peak FLOP/s. Defaults: A100 SXM (400 W, 312e12
// dense BF16 FLOP/s), the paper's assumption.
double EstimateEnergyJoules(double num_params, int64_t tokens, double tdp_watts = 400.0,
                            double peak_flops = 312e12);

// What these terms read, from an episode's accounting (envs/runtime/episode.h: usage().total,
// every call the episode made to any endpoint). An env fills RewardInput::usage with it before
// computing rewards; left empty, every cost term scores 0.
CostUsage CostUsageFrom(const llm::UsageTotals& totals);

class ApiCostReward : public RewardTerm {
 public:
  explicit ApiCostReward(CostRewardConfig config = {}) : config_(config) {}
  std::string name() const override { return "api_cost"; }
  Result<double> Compute(const RewardInput& input) const override;

 private:
  CostRewardConfig config_;
};

class EnergyReward : public RewardTerm {
 public:
  explicit EnergyReward(CostRewardConfig config = {}) : config_(config) {}
  std::string name() const override { return "energy"; }
  Result<double> Compute(const RewardInput& input) const override;

 private:
  CostRewardConfig config_;
};

class TokenReward : public RewardTerm {
 public:
  explicit TokenReward(CostRewardConfig config = {}) : config_(config) {}
  std::string name() const override { return "tokens"; }
  Result<double> Compute(const RewardInput& input) const override;

 private:
  CostRewardConfig config_;
};

}  // namespace allot::rewards
