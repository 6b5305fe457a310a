// Advantage estimators by name (grpo.advantage_estimator), as verl's register_adv_est: a variant
// is one function and one name, and the recipe keys it ignores are refused beside it.
//
// Built-ins (advantages.h has the arithmetic):
//   grpo     A_i = (r_i - mean(r)) / (std(r) + eps) within each group (CogER Sec. 3.4,
//            R2-Reasoner Sec. 4.3), step rewards normalised alike (DeepSeekMath Sec. 4.1.3).
//   dr_grpo  A_i = r_i - mean(r): no division by the group std (Dr.GRPO, Liu et al., 2025).
//
// The registry is process-wide; the built-ins are in it before the first lookup. Registering is
// not thread-safe: register at start-up (or in a test) before any lookup from another thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"

namespace allot::trainer {
struct GrpoConfig;
}

namespace allot::trainer::grpo {

// A recipe key written where it changes nothing: `key` under grpo (e.g. "step_advantages"),
// `why` completes "grpo.<key> has no effect ..." (e.g. "with grpo.advantage_estimator: rloo").
struct NoEffect {
  std::string key;
  std::string why;
};

struct AdvantageInputs {
  const std::vector<double>& rewards;  // one per output, after every shaping
  const std::vector<int64_t>& group;   // group[i]: output i's group (any integers)
  // step_rewards[i]: output i's per-step rewards; empty when grpo.step_advantages is off.
  const std::vector<std::vector<double>>& step_rewards;
};

struct AdvantageOutputs {
  std::vector<double> outcome;            // one per output
  std::vector<std::vector<double>> step;  // per output, per step (index k - 1); may be empty
};

struct AdvantageEstimator {
  std::string name;
  std::string doc;  // one line: what it computes and whose it is
  std::function<AdvantageOutputs(const AdvantageInputs&)> compute;
  // The grpo keys it reads beyond the common ones (none for the built-ins).
  std::vector<std::string> reads;
  // The keys that have no effect under this estimator, given the resulting config. Null: none.
  std::function<std::vector<NoEffect>(const GrpoConfig&)> no_effect;
};

// Adds `estimator`; an empty name, a null compute or a name already registered is an error.
Status RegisterAdvantageEstimator(AdvantageEstimator estimator);

// The estimator of that name; unknown: an error that lists the registered names.
Result<const AdvantageEstimator*> FindAdvantageEstimator(const std::string& name);

// The registered names, in registration order (the built-ins first).
std::vector<std::string> AdvantageEstimatorNames();

}  // namespace allot::trainer::grpo
