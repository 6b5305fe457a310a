// Per-token estimators of KL(pi_theta || pi_ref) from samples of pi_theta (Schulman, "Approximating
// KL divergence", 2020), with log r = log pi_ref(y) - log pi_theta(y):
//   k1 = -log r                      unbiased, high variance, can be negative
//   k2 = (log r)^2 / 2               biased, low variance
//   k3 = (r - 1) - log r             unbiased, low variance, >= 0 (GRPO, DeepSeekMath Eq. 4;
//                                    DeepTool when its KL term is on)
// The reference policy is the same model with the LoRA adapter switched off (CogER Eq. 10's
// pi_ref), so it costs a forward pass and no second copy of the weights.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>

#include "core/status.h"

namespace allot::trainer::grpo {

enum class KlEstimator { kK1, kK2, kK3 };

Result<KlEstimator> ParseKlEstimator(const std::string& name);

// Elementwise estimate for `logp` (policy, differentiable) and `ref_logp` (reference).
at::Tensor KlPerToken(const at::Tensor& logp, const at::Tensor& ref_logp, KlEstimator estimator);

}  // namespace allot::trainer::grpo
