#include "trainer/optim/grad_clip.h"

#include <torch/torch.h>

#include <cmath>

namespace allot::trainer {

double ClipGradNorm(const std::vector<at::Tensor>& params, double max_norm) {
  torch::NoGradGuard no_grad;
  double sum_sq = 0.0;
  for (const auto& p : params) {
    const at::Tensor& g = p.grad();
    if (!g.defined()) continue;
    const double n = g.to(torch::kFloat64).norm().item<double>();
    sum_sq += n * n;
  }
  const double norm = std::sqrt(sum_sq);
  if (max_norm > 0.0 && std::isfinite(norm) && norm > max_norm) {
    const double scale = max_norm / (norm + 1e-6);
    for (const auto& p : params) {
      at::Tensor g = p.grad();
      if (g.defined()) g.mul_(scale);
    }
  }
  return norm;
}

}  // namespace allot::trainer
