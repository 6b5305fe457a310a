#include "trainer/sft/sft_loss.h"

#include <torch/torch.h>

namespace allot::trainer {

at::Tensor CompletionLossSum(models::CausalLMImpl& model, const SftMicroBatch& batch,
                             int64_t chunk_tokens) {
  const at::Device dev = model.device();
  const int64_t t = batch.input_ids.size(1);
  if (t < 2 || batch.loss_tokens == 0) {
    return torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat).device(dev));
  }
  at::Tensor ids = batch.input_ids.to(dev);
  at::Tensor hidden = model.Hidden(ids, batch.attention_mask.to(dev));
  const int64_t width = hidden.size(2);
  at::Tensor h = hidden.narrow(1, 0, t - 1).reshape({-1, width});
  at::Tensor targets = ids.narrow(1, 1, t - 1).reshape({-1});
  at::Tensor rows = batch.loss_mask.narrow(1, 1, t - 1).reshape({-1}).nonzero().squeeze(1).to(dev);
  at::Tensor logp =
      model.SelectedLogProbs(h.index_select(0, rows), targets.index_select(0, rows), chunk_tokens);
  return -logp.sum();
}

}  // namespace allot::trainer
