#include "models/sampling.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <memory>
#include <vector>

namespace allot::models {
namespace {

SamplingParams Params(double temperature, int64_t top_k, uint64_t seed) {
  SamplingParams p;
  p.temperature = temperature;
  p.top_k = top_k;
  p.seed = seed;
  return p;
}

// A batch mixing greedy, plain and top-k rows: SampleRows must give each row exactly what its
// sampler gives that row alone, with the random streams advanced the same way.
TEST(SampleRowsTest, EqualsSamplingEachRowAlone) {
  torch::manual_seed(3);
  const at::Tensor logits = torch::randn({5, 300}) * 3;
  const std::vector<SamplingParams> params = {Params(0.0, 0, 1), Params(1.0, 0, 2),
                                              Params(0.0, 0, 3), Params(0.7, 20, 4),
                                              Params(1.3, 0, 5)};
  std::vector<std::unique_ptr<Sampler>> batched, alone;
  std::vector<Sampler*> rows;
  for (size_t r = 0; r < params.size(); ++r) {
    batched.push_back(std::make_unique<Sampler>(params[r], r));
    alone.push_back(std::make_unique<Sampler>(params[r], r));
    rows.push_back(batched.back().get());
  }
  for (int step = 0; step < 3; ++step) {
    const std::vector<SampledToken> got = SampleRows(rows, logits);
    ASSERT_EQ(got.size(), params.size());
    for (size_t r = 0; r < params.size(); ++r) {
      const SampledToken want = alone[r]->Sample(logits[static_cast<int64_t>(r)]);
      EXPECT_EQ(got[r].token, want.token) << "row " << r << " step " << step;
      EXPECT_FLOAT_EQ(got[r].logprob, want.logprob) << "row " << r << " step " << step;
    }
  }
}

TEST(SampleRowsTest, GreedyRowsTakeTheArgmaxAndItsLogprob) {
  const at::Tensor logits = torch::tensor({{0.0f, 2.0f, 1.0f}, {5.0f, -1.0f, 0.0f}});
  Sampler a(Params(0.0, 0, 0), 0);
  Sampler b(Params(0.0, 0, 0), 1);
  const std::vector<SampledToken> got = SampleRows({&a, &b}, logits);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].token, 1);
  EXPECT_EQ(got[1].token, 0);
  EXPECT_FLOAT_EQ(got[0].logprob, torch::log_softmax(logits[0], -1)[1].item<float>());
  EXPECT_FLOAT_EQ(got[1].logprob, torch::log_softmax(logits[1], -1)[0].item<float>());
}

TEST(SampleRowsTest, RowCountMustMatchTheSamplers) {
  Sampler a(Params(0.0, 0, 0), 0);
  EXPECT_THROW(SampleRows({&a}, torch::zeros({2, 4})), c10::Error);
}

}  // namespace
}  // namespace allot::models
