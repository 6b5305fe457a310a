// The fused forward/backward + Adam path against LibTorch autograd (issue 7 benchmark note:
// "verified against the libtorch path in a test (same loss and gradients to 1e-5)").
#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <random>

#include "models/dueling_qnet.h"
#include "trainer/dqn_learner.h"
#include "trainer/fused_dqn_update.h"

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

class FusedGradTest : public ::testing::TestWithParam<bool> {};

TEST_P(FusedGradTest, LossAndGradientsMatchAutograd) {
  const bool huber = GetParam();
  torch::manual_seed(3);
  models::DuelingQNet net;
  Batch b = RandomBatch(64, 9);
  std::vector<float> y(64);
  std::mt19937_64 rng(4);
  std::normal_distribution<float> nd(0, 2);  // big targets: Huber's linear part is exercised
  for (auto& v : y) v = nd(rng);

  FusedDqnUpdate fused(DuelingShape{});
  std::vector<std::vector<float>> grads;
  DuelingParams g{};
  for (size_t k = 0; k < 10; ++k) {
    grads.emplace_back(static_cast<size_t>(fused.sizes()[k]));
    g[k] = grads[k].data();
  }
  std::vector<float> td(64);
  FusedStats st = fused.LossAndGrad(Ptrs(net), b.View(), y.data(), huber, g, td.data());

  auto s = torch::from_blob(b.states.data(), {64, 7});
  auto a = torch::from_blob(b.actions.data(), {64, 1}, torch::kInt64);
  auto w = torch::from_blob(b.weights.data(), {64});
  auto yt = torch::from_blob(y.data(), {64});
  auto q = net->forward(s).gather(1, a).squeeze(1);
  auto per = huber ? torch::smooth_l1_loss(q, yt, at::Reduction::None) : (q - yt).pow(2);
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
  for (int i = 0; i < 64; ++i)
    EXPECT_NEAR(td[static_cast<size_t>(i)], y[static_cast<size_t>(i)] - q[i].item<float>(), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(MseAndHuber, FusedGradTest, ::testing::Values(false, true));

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
