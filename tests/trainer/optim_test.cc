// trainer/optim: schedules against hand computation, clipping, token-weighted accumulation and
// the AdamW state round trip.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "trainer/optim/adamw.h"
#include "trainer/optim/grad_accumulation.h"
#include "trainer/optim/grad_clip.h"
#include "trainer/optim/lr_schedule.h"
#include "trainer/optim/optimizer_state.h"

namespace allot::trainer {
namespace {

LrSchedule Make(const std::string& kind, double lr, int64_t warmup, int64_t total,
                double min_ratio = 0.0, double warmup_ratio = 0.0) {
  OptimConfig c;
  c.schedule = kind;
  c.lr = lr;
  c.warmup_steps = warmup;
  c.warmup_ratio = warmup_ratio;
  c.min_lr_ratio = min_ratio;
  auto s = LrSchedule::Create(c, total);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return *s;
}

TEST(LrScheduleTest, ConstantWithWarmup) {
  LrSchedule s = Make("constant", 1e-3, 4, 100);
  EXPECT_DOUBLE_EQ(s.LrAt(0), 0.0);
  EXPECT_DOUBLE_EQ(s.LrAt(2), 5e-4);
  EXPECT_DOUBLE_EQ(s.LrAt(4), 1e-3);
  EXPECT_DOUBLE_EQ(s.LrAt(99), 1e-3);
}

TEST(LrScheduleTest, LinearDecaysToFloor) {
  LrSchedule s = Make("linear", 1.0, 2, 10);
  EXPECT_DOUBLE_EQ(s.LrAt(1), 0.5);
  EXPECT_DOUBLE_EQ(s.LrAt(2), 1.0);
  EXPECT_DOUBLE_EQ(s.LrAt(6), 0.5);  // (10 - 6) / (10 - 2)
  EXPECT_DOUBLE_EQ(s.LrAt(10), 0.0);
  EXPECT_DOUBLE_EQ(s.LrAt(20), 0.0);
  LrSchedule floor = Make("linear", 1.0, 2, 10, 0.1);
  EXPECT_DOUBLE_EQ(floor.LrAt(6), 0.1 + 0.9 * 0.5);
  EXPECT_DOUBLE_EQ(floor.LrAt(10), 0.1);
}

TEST(LrScheduleTest, CosineWithWarmupRatio) {
  LrSchedule s = Make("cosine", 2.0, 0, 10, 0.0, 0.2);  // warmup = ceil(0.2 * 10) = 2
  EXPECT_EQ(s.warmup_steps(), 2);
  EXPECT_DOUBLE_EQ(s.LrAt(1), 1.0);
  EXPECT_DOUBLE_EQ(s.LrAt(2), 2.0);
  EXPECT_NEAR(s.LrAt(6), 1.0, 1e-12);  // half way: 0.5 * (1 + cos(pi / 2))
  EXPECT_NEAR(s.LrAt(4), 2.0 * 0.5 * (1 + std::cos(M_PI * 0.25)), 1e-12);
  EXPECT_NEAR(s.LrAt(10), 0.0, 1e-12);
}

TEST(LrScheduleTest, RejectsAmbiguousOrImpossibleWarmup) {
  OptimConfig c;
  c.warmup_steps = 3;
  c.warmup_ratio = 0.1;
  EXPECT_FALSE(ValidateOptimConfig(c).ok());
  OptimConfig d;
  d.schedule = "cosine";
  d.warmup_steps = 10;
  EXPECT_FALSE(LrSchedule::Create(d, 10).ok());
  d.schedule = "exponential";
  d.warmup_steps = 0;
  EXPECT_FALSE(LrSchedule::Create(d, 10).ok());
}

TEST(LrScheduleTest, ApplySetsEveryGroup) {
  torch::manual_seed(0);
  torch::nn::Linear lin(3, 2);
  OptimConfig c;
  c.schedule = "linear";
  c.lr = 0.4;
  c.weight_decay = 0.1;
  auto opt = MakeAdamW(c, lin->named_parameters().pairs());
  ASSERT_TRUE(opt.ok()) << opt.status().message();
  ASSERT_EQ((*opt)->param_groups().size(), 2u);  // weight with decay, bias without
  LrSchedule s = *LrSchedule::Create(c, 4);
  EXPECT_DOUBLE_EQ(s.Apply(**opt, 1), 0.3);
  for (auto& g : (*opt)->param_groups()) EXPECT_DOUBLE_EQ(g.options().get_lr(), 0.3);
  auto& decay = static_cast<torch::optim::AdamWOptions&>((*opt)->param_groups()[0].options());
  auto& plain = static_cast<torch::optim::AdamWOptions&>((*opt)->param_groups()[1].options());
  EXPECT_DOUBLE_EQ(decay.weight_decay(), 0.1);
  EXPECT_DOUBLE_EQ(plain.weight_decay(), 0.0);
  EXPECT_EQ((*opt)->param_groups()[1].params()[0].dim(), 1);
}

TEST(GradClipTest, ScalesToMaxNormAndReturnsTheNorm) {
  auto a = torch::zeros({2}, torch::requires_grad());
  auto b = torch::zeros({1}, torch::requires_grad());
  auto none = torch::zeros({1}, torch::requires_grad());  // no gradient: skipped
  a.mutable_grad() = torch::tensor({3.0f, 4.0f});
  b.mutable_grad() = torch::tensor({12.0f});
  EXPECT_DOUBLE_EQ(ClipGradNorm({a, b, none}, 0.0), 13.0);  // off: untouched
  EXPECT_FLOAT_EQ(a.grad()[0].item<float>(), 3.0f);
  EXPECT_DOUBLE_EQ(ClipGradNorm({a, b, none}, 20.0), 13.0);  // under the bound: untouched
  EXPECT_FLOAT_EQ(b.grad()[0].item<float>(), 12.0f);
  EXPECT_DOUBLE_EQ(ClipGradNorm({a, b, none}, 6.5), 13.0);
  EXPECT_NEAR(a.grad()[0].item<float>(), 1.5f, 1e-6);
  EXPECT_NEAR(a.grad()[1].item<float>(), 2.0f, 1e-6);
  EXPECT_NEAR(b.grad()[0].item<float>(), 6.0f, 1e-6);
  EXPECT_NEAR(ClipGradNorm({a, b}, 0.0), 6.5, 1e-5);
}

// Per-token squared error of a linear model over sequences of different lengths.
struct TokenBatch {
  at::Tensor x;  // [tokens, 4]
  at::Tensor y;  // [tokens]
};

at::Tensor TokenLossSum(torch::nn::Linear lin, const TokenBatch& b) {
  return (lin->forward(b.x).squeeze(-1) - b.y).pow(2).sum();
}

TEST(TokenAccumulatorTest, MicroBatchesEqualOneBatch) {
  torch::manual_seed(3);
  torch::nn::Linear lin(4, 1);
  // Three micro-batches of 2, 7 and 3 loss tokens.
  std::vector<TokenBatch> micro;
  for (int64_t n : {2, 7, 3}) micro.push_back({torch::randn({n, 4}), torch::randn({n})});
  TokenBatch all{torch::cat({micro[0].x, micro[1].x, micro[2].x}),
                 torch::cat({micro[0].y, micro[1].y, micro[2].y})};

  lin->zero_grad();
  (TokenLossSum(lin, all) / 12.0).backward();
  const at::Tensor big = lin->weight.grad().clone();
  const double big_loss = (TokenLossSum(lin, all) / 12.0).item<double>();

  lin->zero_grad();
  TokenAccumulator acc(12);
  for (const auto& m : micro) acc.Scale(TokenLossSum(lin, m)).backward();
  EXPECT_TRUE(torch::allclose(lin->weight.grad(), big, 1e-5, 1e-6));
  EXPECT_NEAR(acc.mean_loss(), big_loss, 1e-5);

  // Averaging per-micro-batch means (the bug this helper prevents) differs.
  lin->zero_grad();
  for (const auto& m : micro) {
    (TokenLossSum(lin, m) / static_cast<double>(m.y.size(0)) / 3.0).backward();
  }
  EXPECT_FALSE(torch::allclose(lin->weight.grad(), big, 1e-3, 1e-4));
}

TEST(TokenAccumulatorTest, AllMaskedStepGivesZeroNotNan) {
  TokenAccumulator acc(0);
  at::Tensor l = acc.Scale(torch::zeros({}));
  EXPECT_EQ(l.item<double>(), 0.0);
  EXPECT_EQ(acc.mean_loss(), 0.0);
}

std::unique_ptr<torch::optim::AdamW> Adam(const OptimConfig& c, torch::nn::Linear lin) {
  auto opt = MakeAdamW(c, lin->named_parameters().pairs());
  EXPECT_TRUE(opt.ok()) << opt.status().message();
  return std::move(opt).value();
}

void TakeSteps(torch::nn::Linear& lin, torch::optim::AdamW& opt, const LrSchedule& sched,
               int64_t from, int64_t n) {
  for (int64_t s = from; s < from + n; ++s) {
    torch::manual_seed(100 + s);  // the same data at the same step in every run
    auto x = torch::randn({5, 3});
    opt.zero_grad();
    lin->forward(x).pow(2).mean().backward();
    sched.Apply(opt, s);
    opt.step();
  }
}

TEST(OptimizerStateTest, RestoreContinuesBitForBit) {
  OptimConfig c;
  c.lr = 0.05;
  c.weight_decay = 0.01;
  c.schedule = "cosine";
  c.warmup_steps = 1;
  LrSchedule sched = *LrSchedule::Create(c, 8);

  torch::manual_seed(7);
  torch::nn::Linear straight(3, 2);
  auto opt = Adam(c, straight);
  TakeSteps(straight, *opt, sched, 0, 3);
  auto bytes = SerializeAdamWState(*opt, 3);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();

  // A second model with the weights at step 3 and a fresh optimizer, restored from the bytes.
  torch::nn::Linear resumed(3, 2);
  {
    torch::NoGradGuard g;
    resumed->weight.copy_(straight->weight);
    resumed->bias.copy_(straight->bias);
  }
  auto opt2 = Adam(c, resumed);
  auto step = RestoreAdamWState(*opt2, *bytes, "optimizer.safetensors");
  ASSERT_TRUE(step.ok()) << step.status().message();
  EXPECT_EQ(*step, 3);

  // The same model without the restore: Adam's moments start over, and the weights differ.
  torch::nn::Linear fresh(3, 2);
  {
    torch::NoGradGuard g;
    fresh->weight.copy_(straight->weight);
    fresh->bias.copy_(straight->bias);
  }
  auto opt3 = Adam(c, fresh);

  TakeSteps(straight, *opt, sched, 3, 4);
  TakeSteps(resumed, *opt2, sched, 3, 4);
  TakeSteps(fresh, *opt3, sched, 3, 4);
  EXPECT_TRUE(torch::equal(straight->weight, resumed->weight));
  EXPECT_TRUE(torch::equal(straight->bias, resumed->bias));
  EXPECT_FALSE(torch::equal(straight->weight, fresh->weight));
}

TEST(OptimizerStateTest, MismatchedModelIsRefusedAndNamed) {
  OptimConfig c;
  torch::nn::Linear a(3, 2);
  auto opt = Adam(c, a);
  LrSchedule sched = *LrSchedule::Create(c, 4);
  TakeSteps(a, *opt, sched, 0, 1);
  auto bytes = *SerializeAdamWState(*opt, 1);

  torch::nn::Linear wider(4, 2);
  auto opt2 = Adam(c, wider);
  auto r = RestoreAdamWState(*opt2, bytes, "ckpt/optimizer.safetensors");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("ckpt/optimizer.safetensors"), std::string::npos);
  EXPECT_NE(r.status().message().find("param.0.exp_avg"), std::string::npos);
  EXPECT_TRUE(opt2->state().empty());  // nothing half-restored

  auto garbage = RestoreAdamWState(*opt2, "not a safetensors file", "x.safetensors");
  EXPECT_FALSE(garbage.ok());
}

}  // namespace
}  // namespace allot::trainer
