#include "trainer/grpo/kl_estimator.h"

#include <torch/torch.h>

namespace allot::trainer::grpo {

Result<KlEstimator> ParseKlEstimator(const std::string& name) {
  if (name == "k1") return KlEstimator::kK1;
  if (name == "k2") return KlEstimator::kK2;
  if (name == "k3") return KlEstimator::kK3;
  return InvalidArgument("grpo.kl_estimator: '" + name + "' is not one of k1, k2, k3");
}

at::Tensor KlPerToken(const at::Tensor& logp, const at::Tensor& ref_logp, KlEstimator estimator) {
  const at::Tensor log_r = ref_logp - logp;
  switch (estimator) {
    case KlEstimator::kK1:
      return -log_r;
    case KlEstimator::kK2:
      return 0.5 * log_r * log_r;
    case KlEstimator::kK3:
      return torch::exp(log_r) - 1.0 - log_r;
  }
  return -log_r;
}

}  // namespace allot::trainer::grpo
