#include "models/layer_checkpoint.h"

#include <gtest/gtest.h>
#include <malloc.h>
#include <torch/torch.h>

#include <fstream>
#include <string>

#include "models/causal_lm.h"
#include "tests/models/tiny_model.h"

namespace allot::models {
namespace {

using testing::MakeTempDir;
using testing::TinyModelOptions;
using testing::WriteTinyModel;

std::shared_ptr<CausalLMImpl> LoadTiny(double lora_dropout, int64_t layers = 3) {
  TinyModelOptions o;
  o.num_layers = layers;
  auto model = CausalLMImpl::Load(WriteTinyModel(MakeTempDir("ckpt"), o));
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  LoraSpec spec;
  spec.r = 4;
  spec.dropout = lora_dropout;
  EXPECT_TRUE((*model)->AttachLora(spec, {"all-linear"}, 5).ok());
  torch::NoGradGuard no_grad;
  for (auto& p : (*model)->LoraParameters()) p.normal_(0.0, 0.3);
  return *model;
}

std::vector<at::Tensor> LoraGrads(CausalLMImpl& model, const at::Tensor& ids, bool checkpoint,
                                  uint64_t seed) {
  model.train();
  model.set_gradient_checkpointing(checkpoint);
  for (auto& p : model.LoraParameters()) p.mutable_grad() = at::Tensor();
  torch::manual_seed(seed);
  model.TokenLogProbs(ids).sum().backward();
  std::vector<at::Tensor> out;
  for (auto& p : model.LoraParameters()) out.push_back(p.grad().clone());
  return out;
}

void ExpectSameGrads(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_LE((a[i] - b[i]).abs().max().item<double>(), 1e-6) << "parameter " << i;
  }
}

TEST(LayerCheckpointTest, GradientsEqualWithoutCheckpointing) {
  auto model = LoadTiny(0.0);
  const at::Tensor ids = torch::randint(1, 64, {2, 24}, torch::kLong);
  ExpectSameGrads(LoraGrads(*model, ids, false, 1), LoraGrads(*model, ids, true, 1));
}

// LoRA dropout draws again in the recomputation; the generator is replayed, so the masks and
// the gradients are those of the first run. Fails if the recomputation draws fresh masks.
TEST(LayerCheckpointTest, DropoutMasksReplayInRecomputation) {
  auto model = LoadTiny(0.3);
  const at::Tensor ids = torch::randint(1, 64, {2, 24}, torch::kLong);
  const auto plain = LoraGrads(*model, ids, false, 7);
  ExpectSameGrads(plain, LoraGrads(*model, ids, true, 7));
  // The generator ends where an uncheckpointed step leaves it.
  torch::manual_seed(9);
  LoraGrads(*model, ids, false, 9);
  const double after_plain = torch::rand({1}).item<double>();
  LoraGrads(*model, ids, true, 9);
  EXPECT_EQ(torch::rand({1}).item<double>(), after_plain);
}

// Packed batches (TokenLogProbs packs a padded batch): the segment list must outlive forward.
TEST(LayerCheckpointTest, PackedBatchGradientsEqual) {
  auto model = LoadTiny(0.0);
  at::Tensor ids = torch::randint(1, 64, {3, 20}, torch::kLong);
  at::Tensor mask = torch::ones({3, 20}, torch::kLong);
  mask[0].narrow(0, 0, 12).zero_();
  mask[2].narrow(0, 0, 5).zero_();
  auto grads = [&](bool checkpoint) {
    model->train();
    model->set_packing(true);
    model->set_gradient_checkpointing(checkpoint);
    for (auto& p : model->LoraParameters()) p.mutable_grad() = at::Tensor();
    model->TokenLogProbs(ids, mask).sum().backward();
    std::vector<at::Tensor> out;
    for (auto& p : model->LoraParameters()) out.push_back(p.grad().clone());
    return out;
  };
  ExpectSameGrads(grads(false), grads(true));
}

// model.checkpoint_layers: the first N layers are recomputed, the rest keep their activations;
// the gradients are those of no checkpointing for every N. Fails if the layer index is off (a
// layer skipped or run twice) or if N is ignored.
TEST(LayerCheckpointTest, FirstLayersOnlyGradientsEqual) {
  auto model = LoadTiny(0.0);
  const at::Tensor ids = torch::randint(1, 64, {2, 24}, torch::kLong);
  const auto plain = LoraGrads(*model, ids, false, 1);
  for (int64_t n : {1, 2}) {
    ASSERT_TRUE(model->SetGradientCheckpointing(true, n).ok());
    EXPECT_EQ(model->checkpoint_layers(), n);
    for (auto& p : model->LoraParameters()) p.mutable_grad() = at::Tensor();
    model->TokenLogProbs(ids).sum().backward();
    std::vector<at::Tensor> partial;
    for (auto& p : model->LoraParameters()) partial.push_back(p.grad().clone());
    ExpectSameGrads(plain, partial);
  }
  ASSERT_TRUE(model->SetGradientCheckpointing(true).ok());
  EXPECT_EQ(model->checkpoint_layers(), 3);
  ASSERT_TRUE(model->SetGradientCheckpointing(false).ok());
  EXPECT_FALSE(model->gradient_checkpointing());
}

TEST(LayerCheckpointTest, CheckpointLayersOutOfRangeOrWithoutCheckpointingIsAnError) {
  auto model = LoadTiny(0.0);
  Status s = model->SetGradientCheckpointing(true, 4);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.ToString().find("model.checkpoint_layers: 4"), std::string::npos) << s.ToString();
  EXPECT_NE(s.ToString().find("3 decoder layers"), std::string::npos) << s.ToString();
  s = model->SetGradientCheckpointing(false, 2);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.ToString().find("model.gradient_checkpointing"), std::string::npos) << s.ToString();
  // Through the recipe's model section: Load refuses the same.
  ModelConfig config;
  TinyModelOptions o;
  config.path = WriteTinyModel(MakeTempDir("ckpt_cfg"), o);
  config.checkpoint_layers = 1;
  auto loaded = CausalLMImpl::Load(config);
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().ToString().find("model.checkpoint_layers"), std::string::npos);
  config.gradient_checkpointing = true;
  loaded = CausalLMImpl::Load(config);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ((*loaded)->checkpoint_layers(), 1);
}

TEST(LayerCheckpointTest, FullFineTuningGradientsEqual) {
  TinyModelOptions o;
  auto loaded = CausalLMImpl::Load(WriteTinyModel(MakeTempDir("ckpt_full"), o));
  ASSERT_TRUE(loaded.ok());
  auto model = *loaded;
  const at::Tensor ids = torch::randint(1, 64, {2, 16}, torch::kLong);
  auto grads = [&](bool checkpoint) {
    model->train();
    model->set_gradient_checkpointing(checkpoint);
    model->zero_grad();
    model->TokenLogProbs(ids).sum().backward();
    std::vector<at::Tensor> out;
    for (auto& p : model->parameters()) out.push_back(p.grad().clone());
    return out;
  };
  ExpectSameGrads(grads(false), grads(true));
}

double StatusMiB(const std::string& key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) return std::stod(line.substr(key.size() + 1)) / 1024.0;
  }
  return -1.0;
}

// Peak resident memory of forward + backward on a long sequence: the high-water mark is reset
// before each run, and blocks above 64 KiB are mmapped so freed activations leave the resident
// set. Without checkpointing every layer's attention scores and probabilities stay alive until
// backward; with it, one layer's at a time.
TEST(LayerCheckpointIntegrationTest, LowersPeakMemoryOnALongSequence) {
  if (!std::ofstream("/proc/self/clear_refs").good()) GTEST_SKIP() << "no clear_refs";
  mallopt(M_MMAP_THRESHOLD, 64 * 1024);
  auto model = LoadTiny(0.0, /*layers=*/6);
  const at::Tensor ids = torch::randint(1, 64, {1, 768}, torch::kLong);
  // layers: how many decoder layers are recomputed (0: no checkpointing).
  auto peak = [&](int64_t layers) {
    model->train();
    EXPECT_TRUE(model->SetGradientCheckpointing(layers > 0, layers > 0 ? layers : -1).ok());
    for (auto& p : model->LoraParameters()) p.mutable_grad() = at::Tensor();
    std::ofstream("/proc/self/clear_refs") << "5";
    const double base = StatusMiB("VmRSS");
    model->TokenLogProbs(ids).sum().backward();
    return StatusMiB("VmHWM") - base;
  };
  peak(0);  // warm-up: lazily initialised kernels and buffers
  const double plain = peak(0);
  const double checkpointed = peak(6);
  // model.checkpoint_layers 3: half the layers keep their activations, so the peak lies between.
  const double half = peak(3);
  RecordProperty("peak_mib_plain", std::to_string(plain));
  RecordProperty("peak_mib_checkpointed", std::to_string(checkpointed));
  RecordProperty("peak_mib_half_checkpointed", std::to_string(half));
  std::printf("peak growth: %.1f MiB plain, %.1f MiB checkpointed, %.1f MiB first 3 of 6\n", plain,
              checkpointed, half);
  EXPECT_LT(checkpointed, 0.5 * plain);
  EXPECT_GT(half, 1.3 * checkpointed);
  EXPECT_LT(half, 0.8 * plain);
}

}  // namespace
}  // namespace allot::models
