#include "trainer/sft/packing.h"

#include <torch/torch.h>

#include "models/packed_sequences.h"

namespace allot::trainer {

at::Tensor PackedCompletionLossSum(models::CausalLMImpl& model, const SftMicroBatch& batch,
                                   int64_t chunk_tokens) {
  const at::Device dev = model.device();
  const int64_t t = batch.input_ids.size(1);
  if (t < 2 || batch.loss_tokens == 0) {
    return torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat).device(dev));
  }
  const models::PackedBatch p = models::PackPaddedBatch(batch.input_ids, batch.attention_mask);
  // Column j of [B, T-1] scores token j + 1: keep the pairs whose target is a loss token.
  const at::Tensor is_target =
      batch.loss_mask.to(torch::kCPU).narrow(1, 1, t - 1).reshape({-1}).index_select(0, p.column);
  const at::Tensor keep = is_target.nonzero().squeeze(1);
  const at::Tensor hidden = model.HiddenPacked(p.input_ids, p.lengths);
  const at::Tensor h = hidden.index_select(0, p.from.index_select(0, keep).to(dev));
  const at::Tensor targets = p.target.index_select(0, keep).to(dev);
  return -model.SelectedLogProbs(h, targets, chunk_tokens).sum();
}

}  // namespace allot::trainer
