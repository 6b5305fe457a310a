// trainer/optim: schedules against hand computation, clipping, token-weighted accumulation, the
// AdamW state round trip and the multi-tensor AdamW step against LibTorch's step().
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "trainer/optim/adamw.h"
#include "trainer/optim/grad_accumulation.h"
#include "trainer/optim/grad_clip.h"
#include "trainer/optim/lr_schedule.h"
#include "trainer/optim/multi_tensor_adamw.h"
#include "trainer/optim/optimizer_state.h"
#include "trainer/optim/optimizer_state_key.h"

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

TEST(GradClipTest, ScalesEveryGradientExactlyByOneFactor) {
  torch::manual_seed(5);
  std::vector<at::Tensor> params;
  std::vector<at::Tensor> before;
  for (int64_t n : {7, 3, 5}) {
    params.push_back(torch::zeros({n}, torch::requires_grad()));
    params.back().mutable_grad() = torch::randn({n}) * 10;
    before.push_back(params.back().grad().clone());
  }
  params.push_back(torch::zeros({2}, torch::requires_grad()));  // no gradient: skipped
  const double norm = ClipGradNorm(params, 1.0);
  ASSERT_GT(norm, 1.0);
  const double scale = 1.0 / (norm + 1e-6);
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_TRUE(torch::equal(params[i].grad(), before[i].mul(scale))) << i;
  }
  EXPECT_FALSE(params[3].grad().defined());
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

// multi_tensor: StepAdamW instead of opt.step().
void TakeSteps(torch::nn::Linear& lin, torch::optim::AdamW& opt, const LrSchedule& sched,
               int64_t from, int64_t n, bool multi_tensor = false) {
  for (int64_t s = from; s < from + n; ++s) {
    torch::manual_seed(100 + s);  // the same data at the same step in every run
    auto x = torch::randn({5, 3});
    opt.zero_grad();
    lin->forward(x).pow(2).mean().backward();
    sched.Apply(opt, s);
    if (multi_tensor) {
      StepAdamW(opt);
    } else {
      opt.step();
    }
  }
}

// The save/restore tests' optimizer: weight decay and a cosine schedule with warmup.
OptimConfig RestoreTestConfig() {
  OptimConfig c;
  c.lr = 0.05;
  c.weight_decay = 0.01;
  c.schedule = "cosine";
  c.warmup_steps = 1;
  return c;
}

TEST(OptimizerStateTest, RestoreContinuesBitForBit) {
  const OptimConfig c = RestoreTestConfig();
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

// Five parameters in two groups: {w1, w2, late} with weight decay and lr 0.05, {b1, b2} without
// and lr 0.02. `late` has no gradient in steps 0 and 3, so its step count lags the others (two
// step-count buckets in its group from step 1 on).
struct AdamWFixture {
  std::vector<at::Tensor> params;  // w1, w2, late, b1, b2
  std::unique_ptr<torch::optim::AdamW> opt;
};

AdamWFixture MakeAdamWFixture(bool amsgrad = false) {
  torch::manual_seed(11);
  AdamWFixture f;
  for (const auto& shape : std::vector<std::vector<int64_t>>{{4, 3}, {2, 4}, {3}, {4}, {2}}) {
    f.params.push_back(torch::randn(shape).requires_grad_());
  }
  auto decay = torch::optim::AdamWOptions(0.05).weight_decay(0.01).amsgrad(amsgrad);
  auto plain = torch::optim::AdamWOptions(0.02).weight_decay(0.0).amsgrad(amsgrad);
  plain.betas(std::make_tuple(0.8, 0.99)).eps(1e-6);
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<at::Tensor>{f.params[0], f.params[1], f.params[2]},
                      std::make_unique<torch::optim::AdamWOptions>(decay));
  groups.emplace_back(std::vector<at::Tensor>{f.params[3], f.params[4]},
                      std::make_unique<torch::optim::AdamWOptions>(plain));
  f.opt = std::make_unique<torch::optim::AdamW>(std::move(groups), decay);
  return f;
}

// Gradients for step s (the same in every run, of mixed scale), a schedule that changes the
// groups' lr each step, then one update.
void AdamWStep(AdamWFixture& f, int64_t s, bool multi_tensor) {
  torch::manual_seed(200 + s);
  for (size_t i = 0; i < f.params.size(); ++i) {
    f.params[i].mutable_grad() = torch::randn(f.params[i].sizes()) * std::pow(10.0, i % 3 - 1.0);
  }
  if (s == 0 || s == 3) f.params[2].mutable_grad() = at::Tensor();  // `late`: no gradient
  auto& groups = f.opt->param_groups();
  static_cast<torch::optim::AdamWOptions&>(groups[0].options()).lr(0.05 / (1 + s));
  static_cast<torch::optim::AdamWOptions&>(groups[1].options()).lr(0.02 * (1 + 0.5 * s));
  if (multi_tensor) {
    StepAdamW(*f.opt);
  } else {
    f.opt->step();
  }
}

// Every parameter and every state tensor bit for bit, and the step counts.
void ExpectSameAdamW(const AdamWFixture& a, const AdamWFixture& b) {
  ASSERT_EQ(a.opt->state().size(), b.opt->state().size());
  for (size_t i = 0; i < a.params.size(); ++i) {
    SCOPED_TRACE("param " + std::to_string(i));
    EXPECT_TRUE(torch::equal(a.params[i], b.params[i]));
    auto ia = a.opt->state().find(StateKey(a.params[i]));
    auto ib = b.opt->state().find(StateKey(b.params[i]));
    ASSERT_EQ(ia == a.opt->state().end(), ib == b.opt->state().end());
    if (ia == a.opt->state().end()) continue;
    const auto& sa = static_cast<const torch::optim::AdamWParamState&>(*ia->second);
    const auto& sb = static_cast<const torch::optim::AdamWParamState&>(*ib->second);
    EXPECT_EQ(sa.step(), sb.step());
    EXPECT_TRUE(torch::equal(sa.exp_avg(), sb.exp_avg()));
    EXPECT_TRUE(torch::equal(sa.exp_avg_sq(), sb.exp_avg_sq()));
    EXPECT_EQ(sa.max_exp_avg_sq().defined(), sb.max_exp_avg_sq().defined());
    if (sa.max_exp_avg_sq().defined()) {
      EXPECT_TRUE(torch::equal(sa.max_exp_avg_sq(), sb.max_exp_avg_sq()));
    }
  }
}

const torch::optim::AdamWParamState& StateOf(const AdamWFixture& f, size_t i) {
  return static_cast<const torch::optim::AdamWParamState&>(
      *f.opt->state().at(StateKey(f.params[i])));
}

TEST(MultiTensorAdamWTest, BitIdenticalToStep) {
  AdamWFixture ref = MakeAdamWFixture();
  AdamWFixture multi = MakeAdamWFixture();
  ExpectSameAdamW(ref, multi);
  for (int64_t s = 0; s < 6; ++s) {
    SCOPED_TRACE("step " + std::to_string(s));
    AdamWStep(ref, s, false);
    AdamWStep(multi, s, true);
    ExpectSameAdamW(ref, multi);
    // `late` has no state until its first gradient, then lags by one and later two steps.
    EXPECT_EQ(multi.opt->state().size(), s == 0 ? 4u : 5u);
  }
  EXPECT_EQ(StateOf(multi, 0).step(), 6);
  EXPECT_EQ(StateOf(multi, 2).step(), 4);
  EXPECT_EQ(StateOf(multi, 4).step(), 6);
  // The parameters moved (a step that did nothing would also be "identical").
  AdamWFixture start = MakeAdamWFixture();
  for (size_t i = 0; i < start.params.size(); ++i) {
    EXPECT_FALSE(torch::equal(start.params[i], multi.params[i])) << i;
  }
}

TEST(MultiTensorAdamWTest, AmsgradFallsBackToStep) {
  AdamWFixture ref = MakeAdamWFixture(/*amsgrad=*/true);
  AdamWFixture multi = MakeAdamWFixture(/*amsgrad=*/true);
  for (int64_t s = 0; s < 3; ++s) {
    AdamWStep(ref, s, false);
    AdamWStep(multi, s, true);
  }
  ExpectSameAdamW(ref, multi);
  EXPECT_TRUE(StateOf(multi, 0).max_exp_avg_sq().defined());
}

// A state saved after StepAdamW and restored into a fresh optimizer continues as the original.
TEST(MultiTensorAdamWTest, RestoredStateContinuesBitForBit) {
  const OptimConfig c = RestoreTestConfig();
  LrSchedule sched = *LrSchedule::Create(c, 8);

  torch::manual_seed(7);
  torch::nn::Linear straight(3, 2);
  auto copy = [&](torch::nn::Linear& to) {
    torch::NoGradGuard g;
    to->weight.copy_(straight->weight);
    to->bias.copy_(straight->bias);
  };
  torch::nn::Linear by_step(3, 2);  // the same run with LibTorch's step() throughout
  copy(by_step);
  auto opt = Adam(c, straight);
  auto opt_by_step = Adam(c, by_step);
  TakeSteps(straight, *opt, sched, 0, 3, /*multi_tensor=*/true);
  TakeSteps(by_step, *opt_by_step, sched, 0, 3);
  auto bytes = SerializeAdamWState(*opt, 3);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  EXPECT_EQ(*bytes, *SerializeAdamWState(*opt_by_step, 3));

  torch::nn::Linear resumed(3, 2);
  copy(resumed);
  auto opt2 = Adam(c, resumed);
  auto step = RestoreAdamWState(*opt2, *bytes, "optimizer.safetensors");
  ASSERT_TRUE(step.ok()) << step.status().message();
  EXPECT_EQ(*step, 3);

  TakeSteps(straight, *opt, sched, 3, 4, /*multi_tensor=*/true);
  TakeSteps(resumed, *opt2, sched, 3, 4, /*multi_tensor=*/true);
  TakeSteps(by_step, *opt_by_step, sched, 3, 4);
  EXPECT_TRUE(torch::equal(straight->weight, resumed->weight));
  EXPECT_TRUE(torch::equal(straight->bias, resumed->bias));
  EXPECT_TRUE(torch::equal(straight->weight, by_step->weight));
  EXPECT_TRUE(torch::equal(straight->bias, by_step->bias));
  auto end = SerializeAdamWState(*opt2, 7);
  ASSERT_TRUE(end.ok()) << end.status().message();
  EXPECT_EQ(*end, *SerializeAdamWState(*opt_by_step, 7));
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
