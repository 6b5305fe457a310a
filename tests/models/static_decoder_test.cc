#include "models/static_decoder.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <vector>

#include "models/causal_lm.h"
#include "tests/models/tiny_model.h"

namespace allot::models {
namespace {

using testing::MakeTempDir;
using testing::WriteTinyModel;

// Qwen3-shaped (q/k norms) with grouped-query attention: 4 query heads over 2 kv heads.
std::shared_ptr<CausalLMImpl> LoadQwen3Gqa() {
  auto m = CausalLMImpl::Load(
      WriteTinyModel(MakeTempDir("static_decoder"),
                     {.model_type = "qwen3", .num_heads = 4, .num_kv_heads = 2, .seed = 3}));
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return *m;
}

float MaxRelDiff(const at::Tensor& a, const at::Tensor& b) {
  return ((a - b).abs().max() / b.abs().max()).item<float>();
}

// Left-padded prompts of different lengths; each row is fed its own fixed continuation and rows
// leave the batch after different numbers of steps. Every step's logits must equal the growing
// cache's (today's decode: Hidden with the mask extended by a column of ones) and a full
// recomputation of the row alone without any cache. `fixed_rows`: rows leave by compaction in
// place (what a CUDA graph needs) instead of smaller buffers.
void ExpectStepsEqualGrowingCacheAndFullRecomputation(bool fixed_rows) {
  auto m = LoadQwen3Gqa();
  torch::NoGradGuard g;
  const std::vector<std::vector<int64_t>> prompts = {{4, 8, 15}, {7, 7, 1, 2, 3, 4, 5}, {9, 2}};
  const std::vector<int64_t> steps_of = {6, 2, 4};  // decode steps before each row leaves
  const int64_t rows = 3;
  const int64_t width = 7;
  at::Tensor ids = torch::zeros({rows, width}, torch::kLong);
  at::Tensor mask = torch::zeros({rows, width}, torch::kLong);
  for (int64_t b = 0; b < rows; ++b) {
    const auto n = static_cast<int64_t>(prompts[b].size());
    ids[b].narrow(0, width - n, n).copy_(torch::tensor(prompts[b], torch::kLong));
    mask[b].narrow(0, width - n, n).fill_(1);
  }
  KVCache growing(m->config().num_hidden_layers);
  m->Hidden(ids, mask, {}, &growing);
  StaticDecoder decoder(m.get(), growing, mask, /*capacity=*/width + 6, /*cuda_graph=*/false,
                        fixed_rows);

  std::vector<int64_t> live = {0, 1, 2};
  std::vector<std::vector<int64_t>> fed(rows);
  for (int64_t step = 0; step < 6; ++step) {
    std::vector<int64_t> keep;
    std::vector<int64_t> still;
    for (size_t i = 0; i < live.size(); ++i) {
      if (step < steps_of[live[i]]) {
        keep.push_back(static_cast<int64_t>(i));
        still.push_back(live[i]);
      }
    }
    if (still.size() < live.size()) {
      const at::Tensor idx = torch::tensor(keep, torch::kLong);
      growing.Select(idx);
      mask = mask.index_select(0, idx);
      decoder.Select(idx);
    }
    live = still;
    std::vector<int64_t> next;
    for (int64_t r : live) {
      next.push_back((11 * r + 5 * step + 3) % 64);
      fed[r].push_back(next.back());
    }
    const auto n = static_cast<int64_t>(live.size());
    const at::Tensor tokens = torch::tensor(next, torch::kLong);
    mask = torch::cat({mask, torch::ones({n, 1}, torch::kLong)}, 1);
    const at::Tensor want =
        m->Logits(m->Hidden(tokens.view({n, 1}), mask, {}, &growing)).select(1, 0);
    const at::Tensor got = decoder.Step(tokens);
    ASSERT_EQ(got.sizes(), want.sizes());
    EXPECT_LT(MaxRelDiff(got, want), 1e-5) << "step " << step;
    EXPECT_TRUE(torch::equal(got.argmax(-1), want.argmax(-1))) << "step " << step;
    for (int64_t i = 0; i < n; ++i) {
      std::vector<int64_t> alone = prompts[live[i]];
      alone.insert(alone.end(), fed[live[i]].begin(), fed[live[i]].end());
      const at::Tensor full = m->forward(torch::tensor(alone, torch::kLong).unsqueeze(0))[0][-1];
      EXPECT_LT(MaxRelDiff(got[i], full), 1e-4) << "step " << step << " row " << live[i];
    }
  }
  EXPECT_EQ(decoder.length(), width + 6);
  EXPECT_EQ(decoder.batch_size(), 1);
}

TEST(StaticDecoderTest, StepsEqualGrowingCacheAndFullRecomputation) {
  ExpectStepsEqualGrowingCacheAndFullRecomputation(/*fixed_rows=*/false);
}

TEST(StaticDecoderTest, RowsCompactedInPlaceEqualGrowingCacheAndFullRecomputation) {
  ExpectStepsEqualGrowingCacheAndFullRecomputation(/*fixed_rows=*/true);
}

TEST(StaticDecoderTest, StepBeyondTheCapacityFails) {
  auto m = LoadQwen3Gqa();
  torch::NoGradGuard g;
  const at::Tensor ids = torch::tensor({{3, 4}}, torch::kLong);
  const at::Tensor mask = torch::ones({1, 2}, torch::kLong);
  KVCache growing(m->config().num_hidden_layers);
  m->Hidden(ids, mask, {}, &growing);
  StaticDecoder decoder(m.get(), growing, mask, /*capacity=*/3);
  decoder.Step(torch::tensor({5}, torch::kLong));
  EXPECT_THROW(decoder.Step(torch::tensor({6}, torch::kLong)), c10::Error);
}

TEST(KvCacheTest, StaticCacheWritesAtItsDevicePosition) {
  const auto f = torch::TensorOptions().dtype(torch::kFloat);
  StaticKVCache cache(/*num_layers=*/1, /*batch=*/2, /*kv_heads=*/1, /*capacity=*/4,
                      /*head_dim=*/2, f);
  KVCache growing(1);
  growing.Append(0, torch::ones({2, 1, 2, 2}, f), torch::ones({2, 1, 2, 2}, f) * 2);
  cache.Load(growing);
  EXPECT_EQ(cache.position().item<int64_t>(), 2);
  auto [k, v] =
      cache.Append(0, torch::full({2, 1, 1, 2}, 7.0, f), torch::full({2, 1, 1, 2}, 8.0, f));
  EXPECT_EQ(k.size(2), 4);
  EXPECT_EQ(k[0][0][2][0].item<float>(), 7.0f);
  EXPECT_EQ(v[1][0][1][1].item<float>(), 2.0f);
  EXPECT_EQ(k[0][0][3][0].item<float>(), 0.0f);  // not written yet: zeros, not garbage
  cache.Advance();
  EXPECT_EQ(cache.position().item<int64_t>(), 3);
}

}  // namespace
}  // namespace allot::models
