// The fused forward/backward + Adam path against LibTorch autograd: the same loss and gradients
// to 1e-5, so that the fused path bench/trainer/dqn_bench.cc times computes what LibTorch does.
#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <random>
#include <string>

#include "models/dueling_qnet.h"
#include "trainer/dqn/dqn_learner.h"
#include "trainer/dqn/fused_dqn_update.h"

namespace allot::trainer {
namespace {

struct Batch {
  std::vector<float> states, next_states, rewards, dones, discounts, weights;
  std::vector<int64_t> actions;
  FusedBatch View() const {
    return {static_cast<int>(actions.size()),
            states.data(),
            next_states.data(),
            actions.data(),
            rewards.data(),
            dones.data(),
            discounts.data(),
            weights.data()};
  }
  SampledBatch Sampled() const {
    SampledBatch b;
    b.states = states;
    b.next_states = next_states;
    b.actions = actions;
    b.rewards = rewards;
    b.dones = dones;
    b.discounts = discounts;
    b.weights = weights;
    for (size_t i = 0; i < actions.size(); ++i) b.indices.push_back(static_cast<int64_t>(i));
    return b;
  }
};

Batch RandomBatch(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> feat(0, 3), act(0, 4);
  std::uniform_real_distribution<float> u(0, 1);
  Batch b;
  for (int i = 0; i < n * 7; ++i) {
    b.states.push_back(static_cast<float>(feat(rng)));
    b.next_states.push_back(static_cast<float>(feat(rng)));
  }
  for (int i = 0; i < n; ++i) {
    b.actions.push_back(act(rng));
    b.rewards.push_back(u(rng) * 2 - 0.5f);
    b.dones.push_back(u(rng) < 0.3f ? 1.0f : 0.0f);
    b.discounts.push_back(0.9f);
    b.weights.push_back(0.5f + u(rng));
  }
  return b;
}

ConstDuelingParams Ptrs(models::DuelingQNet& net) {
  ConstDuelingParams p{};
  auto params = net->parameters();
  for (size_t k = 0; k < p.size(); ++k) p[k] = params[k].data_ptr<float>();
  return p;
}

struct GradCase {
  bool huber;
  FusedIsa isa;
  int batch;
  int hidden;  // 32: vector kernels; anything else: the generic path
};

std::vector<std::vector<float>> GradBuffers(const FusedDqnUpdate& fused, DuelingParams* g) {
  std::vector<std::vector<float>> grads;
  for (size_t k = 0; k < 10; ++k) {
    grads.emplace_back(static_cast<size_t>(fused.sizes()[k]), -7.0f);  // must be overwritten
    (*g)[k] = grads[k].data();
  }
  return grads;
}

class FusedGradTest : public ::testing::TestWithParam<GradCase> {};

TEST_P(FusedGradTest, LossAndGradientsMatchAutograd) {
  const GradCase c = GetParam();
  if (c.isa == FusedIsa::kAvx2 && !FusedDqnUpdate::Avx2Supported()) GTEST_SKIP() << "no AVX2";
  const int n = c.batch;
  torch::manual_seed(3);
  models::DuelingQNet net(models::DuelingQNetOptions{.hidden = c.hidden});
  Batch b = RandomBatch(n, 9);
  std::vector<float> y(static_cast<size_t>(n));
  std::mt19937_64 rng(4);
  std::normal_distribution<float> nd(0, 2);  // big targets: Huber's linear part is exercised
  for (auto& v : y) v = nd(rng);

  FusedDqnUpdate fused(DuelingShape{.hidden = c.hidden}, c.isa);
  if (c.hidden != 32) {
    EXPECT_STREQ(fused.kernel(), "generic");
  } else {
    EXPECT_STREQ(fused.kernel(), c.isa == FusedIsa::kPortable ? "sse2" : "avx2");
  }
  DuelingParams g{};
  auto grads = GradBuffers(fused, &g);
  std::vector<float> td(static_cast<size_t>(n));
  FusedStats st = fused.LossAndGrad(Ptrs(net), b.View(), y.data(), c.huber, g, td.data());

  auto s = torch::from_blob(b.states.data(), {n, 7});
  auto a = torch::from_blob(b.actions.data(), {n, 1}, torch::kInt64);
  auto w = torch::from_blob(b.weights.data(), {n});
  auto yt = torch::from_blob(y.data(), {n});
  auto q = net->forward(s).gather(1, a).squeeze(1);
  auto per = c.huber ? torch::smooth_l1_loss(q, yt, at::Reduction::None) : (q - yt).pow(2);
  auto loss = (w * per).mean();
  loss.backward();
  EXPECT_NEAR(st.loss, loss.item<double>(), 1e-5);
  EXPECT_NEAR(st.q_mean, q.mean().item<double>(), 1e-5);
  auto params = net->parameters();
  double worst = 0;
  for (size_t k = 0; k < 10; ++k) {
    auto tg = params[k].grad().contiguous();
    ASSERT_EQ(tg.numel(), fused.sizes()[k]);
    for (int i = 0; i < fused.sizes()[k]; ++i) {
      worst = std::max(worst, std::abs(static_cast<double>(tg.data_ptr<float>()[i] -
                                                           grads[k][static_cast<size_t>(i)])));
    }
  }
  EXPECT_LT(worst, 1e-5) << "largest gradient difference";
  for (int i = 0; i < n; ++i)
    EXPECT_NEAR(td[static_cast<size_t>(i)], y[static_cast<size_t>(i)] - q[i].item<float>(), 1e-5);
}

// Batch 64 (RLoT), a batch that is not a multiple of the 8-row padding, and one sample; the
// portable and AVX2 kernels; and the generic path for another hidden width.
INSTANTIATE_TEST_SUITE_P(LossIsaBatch, FusedGradTest,
                         ::testing::Values(GradCase{false, FusedIsa::kPortable, 64, 32},
                                           GradCase{true, FusedIsa::kPortable, 64, 32},
                                           GradCase{false, FusedIsa::kAvx2, 64, 32},
                                           GradCase{true, FusedIsa::kAvx2, 64, 32},
                                           GradCase{false, FusedIsa::kPortable, 13, 32},
                                           GradCase{true, FusedIsa::kAvx2, 13, 32},
                                           GradCase{false, FusedIsa::kAvx2, 1, 32},
                                           GradCase{false, FusedIsa::kAuto, 64, 16},
                                           GradCase{true, FusedIsa::kAuto, 29, 16}),
                         [](const ::testing::TestParamInfo<GradCase>& info) {
                           const GradCase& c = info.param;
                           const char* isa = c.isa == FusedIsa::kPortable ? "Portable"
                                             : c.isa == FusedIsa::kAvx2   ? "Avx2"
                                                                          : "Auto";
                           return std::string(c.huber ? "Huber" : "Mse") + isa + "Batch" +
                                  std::to_string(c.batch) + "Hidden" + std::to_string(c.hidden);
                         });

// The AVX2 kernels (with fused multiply-add) and the portable ones agree to float rounding on
// the targets, the gradients and the weights after many Adam steps.
TEST(FusedDqnUpdateTest, Avx2AndPortableKernelsAgree) {
  if (!FusedDqnUpdate::Avx2Supported()) GTEST_SKIP() << "no AVX2";
  torch::manual_seed(8);
  models::DuelingQNet a_net, target;
  models::DuelingQNet b_net;
  {
    torch::NoGradGuard ng;
    auto src = a_net->parameters(), dst = b_net->parameters();
    for (size_t k = 0; k < src.size(); ++k) dst[k].copy_(src[k]);
  }
  FusedDqnUpdate avx(DuelingShape{}, FusedIsa::kAvx2), sse(DuelingShape{}, FusedIsa::kPortable);
  ASSERT_STREQ(avx.kernel(), "avx2");
  ASSERT_STREQ(sse.kernel(), "sse2");
  struct Side {
    FusedDqnUpdate* f;
    models::DuelingQNet* net;
    std::vector<std::vector<float>> g, m, v;
  };
  Side sides[2] = {{&avx, &a_net, {}, {}, {}}, {&sse, &b_net, {}, {}, {}}};
  for (auto& side : sides) {
    for (int size : side.f->sizes()) {
      side.g.emplace_back(static_cast<size_t>(size));
      side.m.emplace_back(static_cast<size_t>(size));
      side.v.emplace_back(static_cast<size_t>(size));
    }
  }
  auto arrays = [](std::vector<std::vector<float>>& x) {
    DuelingParams p{};
    for (size_t k = 0; k < 10; ++k) p[k] = x[k].data();
    return p;
  };
  auto params = [](models::DuelingQNet& net) {
    DuelingParams p{};
    auto ps = net->parameters();
    for (size_t k = 0; k < 10; ++k) p[k] = ps[k].data_ptr<float>();
    return p;
  };
  for (int u = 0; u < 20; ++u) {
    Batch b = RandomBatch(64, 300 + static_cast<uint64_t>(u));
    std::vector<float> y[2], td[2];
    FusedStats st[2];
    for (int s = 0; s < 2; ++s) {
      y[s].resize(64);
      td[s].resize(64);
      st[s] = sides[s].f->Step(params(*sides[s].net), Ptrs(target), b.View(), true, u % 2 == 1,
                               arrays(sides[s].g), arrays(sides[s].m), arrays(sides[s].v), u,
                               AdamHyper{}, y[s].data(), td[s].data());
    }
    EXPECT_NEAR(st[0].loss, st[1].loss, 1e-4 * std::max(1.0, st[1].loss)) << u;
    for (size_t i = 0; i < 64; ++i) EXPECT_NEAR(y[0][i], y[1][i], 1e-4) << u << " " << i;
  }
  auto pa = a_net->parameters(), pb = b_net->parameters();
  for (size_t k = 0; k < pa.size(); ++k) {
    EXPECT_LT((pa[k] - pb[k]).abs().max().item<float>(), 1e-4) << "parameter " << k;
  }
}

// An empty batch is not an error the kernels can crash on: the gradients come back zero.
TEST(FusedDqnUpdateTest, EmptyBatchGivesZeroGradients) {
  torch::manual_seed(2);
  for (int hidden : {32, 16}) {
    models::DuelingQNet net(models::DuelingQNetOptions{.hidden = hidden});
    FusedDqnUpdate fused(DuelingShape{.hidden = hidden});
    DuelingParams g{};
    auto grads = GradBuffers(fused, &g);
    Batch empty;
    fused.LossAndGrad(Ptrs(net), empty.View(), nullptr, false, g, nullptr);
    for (const auto& gk : grads) {
      for (float x : gk) EXPECT_EQ(x, 0.0f) << fused.kernel();
    }
  }
}

// Step() is Targets + LossAndGrad + AdamStep, bit for bit, and repeats bit for bit.
TEST(FusedDqnUpdateTest, StepIsTheThreeCallsAndDeterministic) {
  torch::manual_seed(12);
  models::DuelingQNet n1, n2, n3, target;
  {
    torch::NoGradGuard ng;
    auto src = n1->parameters(), d2 = n2->parameters(), d3 = n3->parameters();
    for (size_t k = 0; k < src.size(); ++k) {
      d2[k].copy_(src[k]);
      d3[k].copy_(src[k]);
    }
  }
  auto mut = [](models::DuelingQNet& net) {
    DuelingParams p{};
    auto ps = net->parameters();
    for (size_t k = 0; k < 10; ++k) p[k] = ps[k].data_ptr<float>();
    return p;
  };
  FusedDqnUpdate f1(DuelingShape{}), f2(DuelingShape{}), f3(DuelingShape{});
  std::vector<std::vector<float>> g[3], m[3], v[3];
  DuelingParams gp[3], mp[3], vp[3];
  for (int s = 0; s < 3; ++s) {
    for (int size : f1.sizes()) {
      g[s].emplace_back(static_cast<size_t>(size));
      m[s].emplace_back(static_cast<size_t>(size));
      v[s].emplace_back(static_cast<size_t>(size));
    }
    for (size_t k = 0; k < 10; ++k) {
      gp[s][k] = g[s][k].data();
      mp[s][k] = m[s][k].data();
      vp[s][k] = v[s][k].data();
    }
  }
  for (int u = 0; u < 5; ++u) {
    Batch b = RandomBatch(37, 500 + static_cast<uint64_t>(u));
    std::vector<float> y1(37), y2(37), y3(37), td1(37), td2(37), td3(37);
    f1.Step(mut(n1), Ptrs(target), b.View(), true, false, gp[0], mp[0], vp[0], u, AdamHyper{},
            y1.data(), td1.data());
    f3.Step(mut(n3), Ptrs(target), b.View(), true, false, gp[2], mp[2], vp[2], u, AdamHyper{},
            y3.data(), td3.data());
    f2.Targets(Ptrs(n2), Ptrs(target), b.View(), true, y2.data());
    f2.LossAndGrad(Ptrs(n2), b.View(), y2.data(), false, gp[1], td2.data());
    ConstDuelingParams cg{};
    for (size_t k = 0; k < 10; ++k) cg[k] = gp[1][k];
    f2.AdamStep(mut(n2), cg, mp[1], vp[1], u, AdamHyper{});
    EXPECT_EQ(y1, y2);
    EXPECT_EQ(y1, y3);
    EXPECT_EQ(td1, td2);
    EXPECT_EQ(td1, td3);
  }
  auto p1 = n1->parameters(), p2 = n2->parameters(), p3 = n3->parameters();
  for (size_t k = 0; k < p1.size(); ++k) {
    EXPECT_TRUE(torch::equal(p1[k], p2[k])) << k;
    EXPECT_TRUE(torch::equal(p1[k], p3[k])) << k;
  }
}

TEST(FusedDqnUpdateTest, ForwardMatchesTheModule) {
  torch::manual_seed(5);
  models::DuelingQNet net;
  Batch b = RandomBatch(16, 1);
  FusedDqnUpdate fused(DuelingShape{});
  std::vector<float> q(16 * 5);
  fused.Forward(Ptrs(net), b.states.data(), 16, q.data());
  torch::NoGradGuard ng;
  auto ref = net->forward(torch::from_blob(b.states.data(), {16, 7})).contiguous();
  for (int i = 0; i < 80; ++i)
    EXPECT_NEAR(q[static_cast<size_t>(i)], ref.data_ptr<float>()[i], 1e-5);
}

// Many updates through DqnLearner: the fused path and LibTorch (autograd + torch::optim::Adam)
// keep the same weights and targets, to float rounding.
TEST(FusedDqnUpdateTest, LearnerPathsAgreeOverManyUpdates) {
  at::set_num_threads(1);
  DqnConfig torch_cfg;
  torch_cfg.fused_update = false;
  torch_cfg.target_update_every = 7;
  DqnConfig fused_cfg = torch_cfg;
  fused_cfg.fused_update = true;
  DqnLearner ref(torch_cfg, 11), fast(fused_cfg, 11);
  Batch probe = RandomBatch(32, 77);
  for (int u = 0; u < 30; ++u) {
    SampledBatch b = RandomBatch(64, 100 + static_cast<uint64_t>(u)).Sampled();
    auto y_ref = ref.Targets(b);
    UpdateStats s_ref = ref.Update(b);
    UpdateStats s_fast = fast.Update(b);
    EXPECT_NEAR(s_ref.loss, s_fast.loss, 1e-4 * std::max(1.0, s_ref.loss)) << u;
    EXPECT_NEAR(s_ref.td_abs_mean, s_fast.td_abs_mean, 1e-4) << u;
    (void)y_ref;
  }
  auto q_ref = ref.OnlineQ(probe.states);
  auto q_fast = fast.OnlineQ(probe.states);
  for (size_t i = 0; i < q_ref.size(); ++i) EXPECT_NEAR(q_ref[i], q_fast[i], 1e-4) << i;
  auto t_ref = ref.TargetQ(probe.states);
  auto t_fast = fast.TargetQ(probe.states);
  for (size_t i = 0; i < t_ref.size(); ++i) EXPECT_NEAR(t_ref[i], t_fast[i], 1e-4) << i;
  // The acting copy follows the fused weights.
  float q[5];
  fast.actor().Forward(std::span<const float>(probe.states.data(), 7), q);
  for (int a = 0; a < 5; ++a) EXPECT_NEAR(q[a], q_fast[static_cast<size_t>(a)], 1e-5);
}

}  // namespace
}  // namespace allot::trainer
