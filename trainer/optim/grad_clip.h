// Global gradient-norm clipping over all trainable parameters, as torch.nn.utils.clip_grad_norm_.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

namespace allot::trainer {

// The L2 norm of all gradients together, computed in float64 in a fixed order (so it repeats
// bit for bit). When `max_norm` > 0 and the norm exceeds it, every gradient is scaled by
// max_norm / (norm + 1e-6). Parameters without a gradient are skipped. Returns the norm before
// clipping; a non-finite norm leaves the gradients untouched.
double ClipGradNorm(const std::vector<at::Tensor>& params, double max_norm);

}  // namespace allot::trainer
