#include "trainer/optim/grad_clip.h"

#include <torch/torch.h>

#include <cmath>

namespace allot::trainer {

double ClipGradNorm(const std::vector<at::Tensor>& params, double max_norm) {
  torch::NoGradGuard no_grad;
  // Each gradient's norm on the gradients' device, then one copy of them all to the host (one
  // device synchronisation instead of one per parameter), summed there in parameter order.
  std::vector<at::Tensor> grads;
  std::vector<at::Tensor> norms;
  for (const auto& p : params) {
    const at::Tensor& g = p.grad();
    if (!g.defined()) continue;
    grads.push_back(g);
    norms.push_back(g.to(torch::kFloat64).norm());
  }
  double sum_sq = 0.0;
  if (!norms.empty()) {
    const at::Tensor host = torch::stack(norms).to(torch::kCPU).contiguous();
    const double* n = host.data_ptr<double>();
    for (int64_t i = 0; i < host.numel(); ++i) sum_sq += n[i] * n[i];
  }
  const double norm = std::sqrt(sum_sq);
  if (max_norm > 0.0 && std::isfinite(norm) && norm > max_norm) {
    const double scale = max_norm / (norm + 1e-6);
    // One multi-tensor multiply (a few kernels on a GPU instead of one per gradient; on the CPU
    // the same g.mul_(scale) per gradient).
    at::_foreach_mul_(grads, at::Scalar(scale));
  }
  return norm;
}

}  // namespace allot::trainer
