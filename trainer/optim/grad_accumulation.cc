#include "trainer/optim/grad_accumulation.h"

#include <torch/torch.h>

#include <algorithm>

namespace allot::trainer {

TokenAccumulator::TokenAccumulator(int64_t step_tokens)
    : step_tokens_(std::max<int64_t>(step_tokens, 1)) {}

at::Tensor TokenAccumulator::Scale(const at::Tensor& token_loss_sum) {
  loss_sum_ += token_loss_sum.detach().to(torch::kFloat64).item<double>();
  return token_loss_sum / static_cast<double>(step_tokens_);
}

}  // namespace allot::trainer
