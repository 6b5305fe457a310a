#include "models/packed_sequences.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>

#include "models/causal_lm.h"
#include "tests/models/tiny_model.h"

namespace allot::models {
namespace {

using testing::MakeTempDir;
using testing::TinyModelOptions;
using testing::WriteTinyModel;

std::shared_ptr<CausalLMImpl> LoadTinyWithLora() {
  TinyModelOptions o;
  o.num_layers = 2;
  auto model = CausalLMImpl::Load(WriteTinyModel(MakeTempDir("packed"), o));
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  LoraSpec spec;
  spec.r = 4;
  EXPECT_TRUE((*model)->AttachLora(spec, {"all-linear"}, 3).ok());
  torch::NoGradGuard no_grad;
  torch::manual_seed(11);
  for (auto& p : (*model)->LoraParameters()) p.normal_(0.0, 0.05);  // B != 0: the adapter acts
  return *model;
}

// Three left-padded sequences of lengths 5, 2 and 7 (T = 7).
struct Padded {
  at::Tensor ids, mask;
};
Padded ThreeSequences() {
  Padded p;
  p.ids = torch::tensor({0, 0, 5,  9,  3, 7, 1,  //
                         0, 0, 0,  0,  0, 4, 8,  //
                         2, 6, 11, 13, 1, 5, 9},
                        torch::kLong)
              .view({3, 7});
  p.mask = (p.ids != 0).to(torch::kLong);
  return p;
}

TEST(PackedSequencesTest, PacksRealTokensAndMapsColumns) {
  const Padded b = ThreeSequences();
  const PackedBatch p = PackPaddedBatch(b.ids, b.mask);
  EXPECT_EQ(p.lengths, (std::vector<int64_t>{5, 2, 7}));
  EXPECT_TRUE(
      p.input_ids.equal(torch::tensor({5, 9, 3, 7, 1, 4, 8, 2, 6, 11, 13, 1, 5, 9}, torch::kLong)));
  // Row 1's only pair: token 4 (stream 5) predicts 8, scored in column 1 * 6 + 5 = 11.
  ASSERT_EQ(p.from.size(0), 4 + 1 + 6);
  EXPECT_EQ(p.from[4].item<int64_t>(), 5);
  EXPECT_EQ(p.target[4].item<int64_t>(), 8);
  EXPECT_EQ(p.column[4].item<int64_t>(), 11);
  // Row 0 starts at column 2: column 2 scores 9 from 5.
  EXPECT_EQ(p.column[0].item<int64_t>(), 2);
  EXPECT_TRUE(SegmentPositions({3, 2}).equal(torch::tensor({0, 1, 2, 0, 1}, torch::kLong)));
}

// Each segment of a packed stream gets the hidden states of its sequence run alone; this fails
// if attention leaks across segments or positions do not restart.
TEST(PackedSequencesTest, SegmentsSeeOnlyThemselves) {
  auto model = LoadTinyWithLora();
  const at::Tensor a = torch::tensor({5, 9, 3, 7, 1}, torch::kLong);
  const at::Tensor c = torch::tensor({2, 6, 11}, torch::kLong);
  torch::NoGradGuard no_grad;
  const at::Tensor packed = model->HiddenPacked(torch::cat({a, c}), {5, 3});
  const at::Tensor alone_a = model->Hidden(a.unsqueeze(0)).squeeze(0);
  const at::Tensor alone_c = model->Hidden(c.unsqueeze(0)).squeeze(0);
  EXPECT_TRUE(torch::allclose(packed.narrow(0, 0, 5), alone_a, 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(packed.narrow(0, 5, 3), alone_c, 1e-5, 1e-5));
}

// TokenLogProbs with packing equals the padded computation on every column that scores a real
// token after a real one, in value and in the LoRA gradients; other columns are 0.
TEST(PackedSequencesTest, PackedLogProbsAndGradientsEqualPadded) {
  auto model = LoadTinyWithLora();
  const Padded b = ThreeSequences();
  const at::Tensor valid =
      (b.mask.narrow(1, 0, 6) * b.mask.narrow(1, 1, 6)).to(torch::kFloat);  // [3, 6]
  auto run = [&](bool packing, std::vector<at::Tensor>* grads) {
    model->set_packing(packing);
    for (auto& p : model->LoraParameters()) p.mutable_grad() = at::Tensor();
    at::Tensor lp = model->TokenLogProbs(b.ids, b.mask);
    (lp * valid * torch::arange(1, 19).view({3, 6})).sum().backward();
    for (auto& p : model->LoraParameters()) grads->push_back(p.grad().clone());
    return lp.detach();
  };
  std::vector<at::Tensor> g_packed, g_padded;
  const at::Tensor packed = run(true, &g_packed);
  const at::Tensor padded = run(false, &g_padded);
  EXPECT_TRUE(torch::allclose(packed * valid, padded * valid, 1e-5, 1e-5));
  EXPECT_EQ((packed * (1 - valid)).abs().sum().item<float>(), 0.0f);
  ASSERT_EQ(g_packed.size(), g_padded.size());
  for (size_t i = 0; i < g_packed.size(); ++i) {
    const double scale = g_padded[i].abs().max().item<double>();
    EXPECT_LE((g_packed[i] - g_padded[i]).abs().max().item<double>(), 1e-4 * std::max(scale, 1.0))
        << "parameter " << i << " (largest gradient " << scale << ")";
  }
}

}  // namespace
}  // namespace allot::models

namespace allot::models {
namespace {

// Without an adapter (every weight trainable) and with a row of length 3.
TEST(PackedSequencesTest, FullModelPackedLogProbsEqualPadded) {
  auto loaded = CausalLMImpl::Load(WriteTinyModel(MakeTempDir("packed_full"), {}));
  ASSERT_TRUE(loaded.ok());
  auto model = *loaded;
  const at::Tensor ids = torch::tensor({0, 0, 5,  9,  3, 7, 1, 2,  //
                                        0, 0, 0,  0,  0, 4, 8, 6,  //
                                        2, 6, 11, 13, 1, 5, 9, 3},
                                       torch::kLong)
                             .view({3, 8});
  const at::Tensor mask = (ids != 0).to(torch::kLong);
  const at::Tensor valid = (mask.narrow(1, 0, 7) * mask.narrow(1, 1, 7)).to(torch::kFloat);
  torch::NoGradGuard no_grad;
  model->set_packing(true);
  const at::Tensor packed = model->TokenLogProbs(ids, mask);
  model->set_packing(false);
  const at::Tensor padded = model->TokenLogProbs(ids, mask);
  EXPECT_TRUE(torch::allclose(packed * valid, padded * valid, 1e-5, 1e-5))
      << packed * valid << padded * valid;
}

}  // namespace
}  // namespace allot::models
