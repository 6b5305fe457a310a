#include "trainer/sft/packing.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>

#include "tests/models/tiny_model.h"
#include "trainer/sft/sft_loss.h"

namespace allot::trainer {
namespace {

// Three left-padded examples of lengths 6, 3 and 8; loss on each one's last tokens only.
SftMicroBatch ThreeExamples() {
  SftMicroBatch b;
  b.input_ids = torch::tensor({0, 0, 5,  9,  3, 7, 1, 2,  //
                               0, 0, 0,  0,  0, 4, 8, 6,  //
                               2, 6, 11, 13, 1, 5, 9, 3},
                              torch::kLong)
                    .view({3, 8});
  b.attention_mask = (b.input_ids != 0).to(torch::kLong);
  b.loss_mask = torch::zeros({3, 8}, torch::kBool);
  b.loss_mask[0].narrow(0, 5, 3).fill_(true);  // row 0: 3 completion tokens
  b.loss_mask[1][7] = true;                    // row 1: 1
  b.loss_mask[2].narrow(0, 4, 4).fill_(true);  // row 2: 4
  b.tokens = b.attention_mask.sum().item<int64_t>();
  b.loss_tokens = b.loss_mask.sum().item<int64_t>();
  return b;
}

// The packed loss equals the padded one in value and in every gradient. If packed examples
// could attend to each other (or positions did not restart), both would differ.
TEST(SftPackingTest, PackedLossAndGradientsEqualPadded) {
  models::testing::TinyModelOptions o;
  auto loaded = models::CausalLMImpl::Load(
      models::testing::WriteTinyModel(models::testing::MakeTempDir("sft_pack"), o));
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  auto model = *loaded;
  const SftMicroBatch batch = ThreeExamples();
  auto run = [&](bool packed, std::vector<at::Tensor>* grads) {
    model->zero_grad();
    at::Tensor loss =
        packed ? PackedCompletionLossSum(*model, batch, 4) : CompletionLossSum(*model, batch, 4);
    loss.backward();
    for (auto& p : model->parameters()) grads->push_back(p.grad().clone());
    return loss.item<double>();
  };
  std::vector<at::Tensor> g_packed, g_padded;
  const double packed = run(true, &g_packed);
  const double padded = run(false, &g_padded);
  EXPECT_NEAR(packed, padded, 1e-5 * std::abs(padded));
  EXPECT_GT(packed, 0.0);
  ASSERT_EQ(g_packed.size(), g_padded.size());
  for (size_t i = 0; i < g_packed.size(); ++i) {
    const double scale = std::max(g_padded[i].abs().max().item<double>(), 1e-3);
    EXPECT_LE((g_packed[i] - g_padded[i]).abs().max().item<double>(), 1e-4 * scale)
        << "parameter " << i;
  }
}

}  // namespace
}  // namespace allot::trainer
