#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <torch/torch.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/checkpoint_store.h"
#include "core/safetensors.h"
#include "envs/synthetic/chain_mdp.h"
#include "models/dueling_qnet.h"
#include "models/navigator_mlp.h"
#include "tests/core/temp_dir.h"
#include "trainer/dqn/dqn_learner.h"
#include "trainer/dqn/dqn_trainer.h"
#include "trainer/dqn/fused_dqn_update.h"
#include "trainer/dqn/replay_buffer.h"

namespace allot::trainer {
namespace {

using testing::TempDir;

std::span<const std::byte> AsBytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

std::vector<float> RandomStates(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> v(0, 3);
  std::vector<float> s(static_cast<size_t>(n) * 7);
  for (auto& x : s) x = static_cast<float>(v(rng));
  return s;
}

Transition MakeTransition(float base, int action, float reward, bool done) {
  Transition t;
  t.state.assign(7, base);
  t.next_state.assign(7, base + 1);
  t.action = action;
  t.reward = reward;
  t.done = done;
  return t;
}

TEST(DuelingQNetTest, ShapeAndParameterCount) {
  models::DuelingQNet net;
  EXPECT_EQ(models::CountParameters(*net), 2566);
  auto q = net->forward(torch::zeros({4, 7}));
  EXPECT_EQ(q.sizes(), (std::vector<int64_t>{4, 5}));
  models::DuelingQNet wide(
      models::DuelingQNetOptions{.state_dim = 3, .num_actions = 2, .hidden = 8});
  EXPECT_EQ(wide->forward(torch::zeros({1, 3})).size(1), 2);
}

TEST(DuelingQNetTest, AdvantageIsCentred) {
  // Q = V + A - mean(A): the mean over actions of Q is V, so Q - mean(Q) = A - mean(A).
  models::DuelingQNet net;
  auto q = net->forward(torch::rand({8, 7}) * 3);
  auto centred = q - q.mean(1, true);
  EXPECT_LT(centred.sum(1).abs().max().item<float>(), 1e-5);
}

TEST(NavigatorMlpTest, MatchesTorchForward) {
  DqnLearner learner(DqnConfig{}, 7);
  auto bytes = learner.OnlineWeights();
  ASSERT_TRUE(bytes.ok());
  auto mlp = models::NavigatorMlp::FromSafetensors(AsBytes(*bytes), "w");
  ASSERT_TRUE(mlp.ok()) << mlp.status().message();
  auto states = RandomStates(16, 3);
  auto torch_q = learner.OnlineQ(states);
  for (int i = 0; i < 16; ++i) {
    float q[5];
    mlp->Forward(std::span<const float>(states.data() + i * 7, 7), q);
    for (int a = 0; a < 5; ++a) EXPECT_NEAR(q[a], torch_q[i * 5 + a], 1e-5);
  }
}

TEST(NavigatorMlpTest, RejectsWrongWeights) {
  std::string junk = "not safetensors";
  EXPECT_FALSE(models::NavigatorMlp::FromSafetensors(AsBytes(junk), "junk").ok());
  auto bytes = safetensors::Serialize({});
  auto r = models::NavigatorMlp::FromSafetensors(AsBytes(*bytes), "empty");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("empty: not a DuelingQNet"), std::string::npos);
}

TEST(DqnLearnerTest, DoubleDqnTargetsOnAHandMadeBatch) {
  DqnConfig cfg;
  cfg.target_update_every = 1000000;
  DqnLearner learner(cfg, 1);
  // Make online and target differ: a few updates without a sync.
  SampledBatch warm;
  warm.states = RandomStates(8, 11);
  warm.next_states = RandomStates(8, 12);
  warm.actions = {0, 1, 2, 3, 4, 0, 1, 2};
  warm.rewards = {1, 0, 1, 0, 1, 0, 1, 0};
  warm.dones = {0, 0, 0, 0, 0, 0, 0, 0};
  warm.discounts.assign(8, 0.9f);
  warm.weights.assign(8, 1.0f);
  for (int i = 0; i < 5; ++i) learner.Update(warm);

  SampledBatch b;
  b.next_states = RandomStates(3, 99);
  b.states = RandomStates(3, 98);
  b.actions = {0, 1, 2};
  b.rewards = {0.5f, -1.0f, 2.0f};
  b.dones = {0, 1, 0};
  b.discounts = {0.9f, 0.9f, 0.81f};
  b.weights.assign(3, 1.0f);
  auto y = learner.Targets(b);
  auto online = learner.OnlineQ(b.next_states);
  auto target = learner.TargetQ(b.next_states);
  for (int i = 0; i < 3; ++i) {
    int best = 0;
    for (int a = 1; a < 5; ++a)
      if (online[i * 5 + a] > online[i * 5 + best]) best = a;
    const float expected = b.rewards[i] + b.discounts[i] * (1 - b.dones[i]) * target[i * 5 + best];
    EXPECT_NEAR(y[i], expected, 1e-6) << i;
  }
  EXPECT_FLOAT_EQ(y[1], -1.0f) << "the target is zeroed at done";

  cfg.double_q = false;  // plain DQN: max of the target net
  DqnLearner plain(cfg, 1);
  auto yp = plain.Targets(b);
  auto tq = plain.TargetQ(b.next_states);
  EXPECT_NEAR(yp[0], 0.5f + 0.9f * *std::max_element(tq.begin(), tq.begin() + 5), 1e-6);
}

TEST(DqnLearnerTest, EpsilonDecaysPerStepToTheFloor) {
  DqnConfig cfg;
  cfg.epsilon_min = 0.5;
  DqnLearner learner(cfg, 0);
  std::vector<float> s(7, 1.0f);
  for (int i = 0; i < 100; ++i) learner.Act(s);
  EXPECT_NEAR(learner.epsilon(), std::pow(0.9995, 100), 1e-12);
  for (int i = 0; i < 5000; ++i) learner.Act(s);
  EXPECT_DOUBLE_EQ(learner.epsilon(), 0.5);
  EXPECT_EQ(learner.env_steps(), 5100);
}

TEST(DqnLearnerTest, LrHalvesEvery1000Episodes) {
  DqnLearner learner(DqnConfig{}, 0);
  EXPECT_DOUBLE_EQ(learner.lr(), 0.01);
  for (int i = 0; i < 999; ++i) learner.EndEpisode();
  EXPECT_DOUBLE_EQ(learner.lr(), 0.01);
  learner.EndEpisode();
  EXPECT_DOUBLE_EQ(learner.lr(), 0.005);
  for (int i = 0; i < 1000; ++i) learner.EndEpisode();
  EXPECT_DOUBLE_EQ(learner.lr(), 0.0025);
}

TEST(DqnLearnerTest, LearningStartsWhenReplayIsFull) {
  DqnConfig cfg;
  cfg.replay_capacity = 10;
  cfg.learn_start = 10;
  cfg.batch_size = 4;
  DqnLearner learner(cfg, 0);
  for (int i = 0; i < 9; ++i) {
    ASSERT_TRUE(learner.Observe(MakeTransition(i % 4, i % 5, 1, false)).ok());
    EXPECT_FALSE(learner.MaybeUpdate().has_value());
  }
  ASSERT_TRUE(learner.Observe(MakeTransition(1, 1, 1, true)).ok());
  EXPECT_TRUE(learner.MaybeUpdate().has_value());
  EXPECT_EQ(learner.updates(), 1);
}

TEST(DqnLearnerTest, TargetSyncEvery50Updates) {
  DqnConfig cfg;
  cfg.replay_capacity = 64;
  cfg.learn_start = 64;
  DqnLearner learner(cfg, 0);
  for (int i = 0; i < 64; ++i)
    ASSERT_TRUE(learner.Observe(MakeTransition(i % 4, i % 5, i % 2, i % 7 == 0)).ok());
  auto probe = RandomStates(4, 5);
  for (int u = 1; u <= 50; ++u) {
    ASSERT_TRUE(learner.MaybeUpdate().has_value());
    const bool synced = learner.OnlineQ(probe) == learner.TargetQ(probe);
    if (u < 50) {
      EXPECT_FALSE(synced) << "target copied early, at update " << u;
    } else {
      EXPECT_TRUE(synced) << "target not copied at update 50";
    }
  }
}

SampledBatch RandomSampledBatch(int n, uint64_t seed) {
  SampledBatch b;
  b.states = RandomStates(n, seed);
  b.next_states = RandomStates(n, seed + 1);
  std::mt19937_64 rng(seed);
  for (int i = 0; i < n; ++i) {
    b.indices.push_back(i);
    b.actions.push_back(static_cast<int64_t>(rng() % 5));
    b.rewards.push_back(static_cast<float>(rng() % 3) - 1.0f);
    b.dones.push_back(rng() % 4 == 0 ? 1.0f : 0.0f);
    b.discounts.push_back(0.9f);
    b.weights.push_back(1.0f);
  }
  return b;
}

// The fused path keeps pointers into the parameters and Adam's state: the acting copy must
// follow every update, and Load (which replaces the optimizer state) must leave a learner that
// continues exactly like the one that was saved.
TEST(DqnLearnerTest, FusedPathFollowsUpdatesAndLoad) {
  at::set_num_threads(1);
  TempDir dir;
  DqnConfig cfg;
  ASSERT_TRUE(cfg.fused_update);
  DqnLearner a(cfg, 3);
  auto probe = RandomStates(8, 40);
  for (int u = 0; u < 5; ++u) {
    a.Update(RandomSampledBatch(64, 100 + static_cast<uint64_t>(u)));
    auto q = a.OnlineQ(probe);
    for (int i = 0; i < 8; ++i) {
      const auto row = q.begin() + i * 5;
      EXPECT_EQ(a.Greedy(std::span<const float>(probe.data() + i * 7, 7)),
                std::max_element(row, row + 5) - row)
          << "update " << u << " state " << i;
    }
  }
  ASSERT_TRUE(a.Save(dir.path()).ok());
  DqnLearner b(cfg, 99);
  b.Update(RandomSampledBatch(64, 7));  // builds b's fused view before Load replaces its state
  ASSERT_TRUE(b.Load(dir.path()).ok());
  for (int u = 0; u < 5; ++u) {
    auto batch = RandomSampledBatch(64, 200 + static_cast<uint64_t>(u));
    a.Update(batch);
    b.Update(batch);
  }
  EXPECT_EQ(a.OnlineQ(probe), b.OnlineQ(probe));
  EXPECT_EQ(*a.OnlineWeights(), *b.OnlineWeights());
  EXPECT_EQ(a.actor().Greedy(std::span<const float>(probe.data(), 7)),
            b.actor().Greedy(std::span<const float>(probe.data(), 7)));
}

// dqn.fused_kernels: "portable" pins the SSE2 kernels (same bits on every x86-64 machine);
// "auto" takes AVX2+FMA where the CPU has them.
TEST(DqnLearnerTest, FusedKernelsFollowTheConfig) {
  DqnConfig cfg;
  cfg.fused_kernels = "portable";
  EXPECT_STREQ(DqnLearner(cfg, 1).fused_kernel(), "sse2");
  cfg.fused_kernels = "auto";
  EXPECT_STREQ(DqnLearner(cfg, 1).fused_kernel(),
               FusedDqnUpdate::Avx2Supported() ? "avx2" : "sse2");
}

TEST(DqnLearnerTest, RejectsMalformedTransitions) {
  DqnLearner learner(DqnConfig{}, 0);
  Transition t = MakeTransition(1, 0, 0, false);
  t.state.resize(3);
  EXPECT_FALSE(learner.Observe(t).ok());
  EXPECT_FALSE(learner.Observe(MakeTransition(1, 7, 0, false)).ok());
  Transition nan = MakeTransition(1, 0, std::nanf(""), false);
  EXPECT_FALSE(learner.Observe(nan).ok());
}

TEST(DqnLearnerTest, NStepReturnsAggregateRewards) {
  DqnConfig cfg;
  cfg.n_step = 3;
  cfg.gamma = 0.5;
  cfg.replay_capacity = 10;
  DqnLearner learner(cfg, 0);
  ASSERT_TRUE(learner.Observe(MakeTransition(0, 0, 1, false)).ok());
  ASSERT_TRUE(learner.Observe(MakeTransition(1, 0, 2, false)).ok());
  EXPECT_EQ(learner.replay().size(), 0u);
  ASSERT_TRUE(learner.Observe(MakeTransition(2, 0, 4, true)).ok());
  // Flushed at done: windows of 3, 2 and 1 transitions.
  ASSERT_EQ(learner.replay().size(), 3u);
  std::mt19937_64 rng(0);
  auto b = learner.replay().Sample(64, rng, 0.4);
  std::set<float> rewards(b.rewards.begin(), b.rewards.end());
  EXPECT_EQ(rewards, (std::set<float>{1 + 0.5f * 2 + 0.25f * 4, 2 + 0.5f * 4, 4}));
}

TEST(ReplayBufferTest, RingOverwritesOldestAndRoundTrips) {
  ReplayBuffer rb(3, 7, false, 0.6, 1e-6);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(rb.Add(MakeTransition(i, i % 5, i, false)).ok());
  EXPECT_TRUE(rb.full());
  EXPECT_EQ(rb.size(), 3u);
  std::mt19937_64 rng(1);
  auto b = rb.Sample(100, rng, 0.4);
  for (float r : b.rewards) EXPECT_GE(r, 2.0f) << "transitions 0 and 1 were overwritten";
  auto bytes = rb.Serialize();
  ASSERT_TRUE(bytes.ok());
  ReplayBuffer back(3, 7, false, 0.6, 1e-6);
  ASSERT_TRUE(back.Deserialize(AsBytes(*bytes), "replay").ok());
  std::mt19937_64 r1(5), r2(5);
  EXPECT_EQ(rb.Sample(10, r1, 0.4).rewards, back.Sample(10, r2, 0.4).rewards);
  ReplayBuffer wrong(4, 7, false, 0.6, 1e-6);
  EXPECT_FALSE(wrong.Deserialize(AsBytes(*bytes), "replay").ok());
}

TEST(ReplayBufferTest, PrioritisedSamplingFavoursLargeTdError) {
  ReplayBuffer rb(2, 7, true, 1.0, 1e-6);
  ASSERT_TRUE(rb.Add(MakeTransition(0, 0, 0, false)).ok());
  ASSERT_TRUE(rb.Add(MakeTransition(1, 1, 1, false)).ok());
  std::vector<int64_t> idx = {0, 1};
  std::vector<float> td = {0.01f, 10.0f};
  rb.UpdatePriorities(idx, td);
  std::mt19937_64 rng(3);
  auto b = rb.Sample(1000, rng, 0.4);
  const auto ones = std::count(b.indices.begin(), b.indices.end(), 1);
  EXPECT_GT(ones, 950);
  // Importance weights correct the bias: the rarely drawn transition weighs most.
  for (size_t k = 0; k < b.indices.size(); ++k) {
    if (b.indices[k] == 0) {
      EXPECT_FLOAT_EQ(b.weights[k], 1.0f);
    }
  }
}

TEST(ChainMdpTest, OnlyTheSequenceEarnsTheFinalReward) {
  envs::ChainMdp env(envs::ChainMdpConfig{});
  env.Reset();
  double ret = 0;
  for (int a : {1, 0, 3, 4}) ret += env.Act(a).reward;
  EXPECT_NEAR(ret, env.OptimalReturn(), 1e-6);
  env.Reset();
  ret = 0;
  for (int a : {1, 3, 0, 4}) ret += env.Act(a).reward;
  EXPECT_NEAR(ret, 0.1, 1e-6);
  // Five blocks are allowed; the sixth decision is a forced Terminate.
  env.Reset();
  for (int i = 0; i < 5; ++i) {
    auto step = env.Act(0);
    EXPECT_FALSE(step.done) << i;
    EXPECT_EQ(step.applied_action, 0) << i;
  }
  auto last = env.Act(0);
  EXPECT_TRUE(last.done);
  EXPECT_EQ(last.applied_action, 4);
}

DqnRunOptions FastOptions(const std::string& ckpt_dir) {
  DqnRunOptions o;
  o.dqn.epsilon_decay = 0.998;
  o.dqn.epsilon_min = 0.02;
  o.total_episodes = 500;
  o.checkpoint_every = 10;
  o.keep_last = 0;
  o.seed = 42;
  o.checkpoint_dir = ckpt_dir;
  return o;
}

// Within 500 episodes the greedy navigator follows the one rewarded block sequence, for several
// seeds (a single lucky seed would prove little).
TEST(DqnLearningIntegrationTest, ReachesTheOptimalGreedyPolicyOnTheChain) {
  at::set_num_threads(1);
  for (uint64_t seed : {1, 2, 3}) {
    DqnRunOptions o = FastOptions("");
    o.seed = seed;
    DqnTrainer trainer(o);
    auto summary = trainer.Run(nullptr, nullptr);
    ASSERT_TRUE(summary.ok());
    std::vector<int> actions;
    const double greedy = trainer.GreedyReturn(&actions);
    EXPECT_NEAR(greedy, envs::ChainMdp(envs::ChainMdpConfig{}).OptimalReturn(), 1e-5) << seed;
    EXPECT_EQ(actions, (std::vector<int>{1, 0, 3, 4})) << seed;
  }
}

// N episodes, SIGKILL, resume, N more must equal 2N uninterrupted episodes bit for bit. Gradient
// updates happen before the kill (learn_start is reached by episode ~25 of the 60, and the
// checkpoint the resume loads records them), and the resumed process is built from another seed
// (other initial weights, another exploration stream), so a restore that loaded nothing, or only
// part of the learner, would end elsewhere.
TEST(DqnResumeIntegrationTest, KillAndResumeIsBitIdentical) {
  at::set_num_threads(1);
  TempDir dir;
  DqnRunOptions straight = FastOptions(dir.Join("straight"));
  straight.total_episodes = 120;
  straight.dqn.learn_start = 100;  // about 25 episodes of 4 transitions
  DqnTrainer reference(straight);
  ASSERT_TRUE(reference.Run(nullptr, nullptr).ok());
  auto expected = reference.learner().OnlineWeights();
  ASSERT_TRUE(expected.ok());
  ASSERT_GT(reference.learner().updates(), 0);

  DqnRunOptions interrupted = straight;
  interrupted.checkpoint_dir = dir.Join("interrupted");
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    DqnTrainer child(interrupted);
    child.Run(nullptr, nullptr).ok();
    ::_exit(0);
  }
  // Kill once the child has passed episode 60.
  CheckpointStore store(interrupted.checkpoint_dir, 0);
  for (int i = 0; i < 3000; ++i) {
    auto steps = store.Steps();
    if (!steps.empty() && steps.back() >= 60) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the child finished before the kill; nothing was resumed";

  // The newest valid checkpoint (what Resume loads) holds updates, not only transitions.
  auto latest = store.LoadLatest(nullptr);
  ASSERT_TRUE(latest.ok()) << latest.status().message();
  std::ifstream learner_json(latest->path + "/learner.json");
  const auto state = nlohmann::json::parse(learner_json, nullptr, false);
  ASSERT_FALSE(state.is_discarded());
  const int64_t updates_at_kill = state.value("updates", int64_t{0});
  EXPECT_GT(updates_at_kill, 0) << latest->path;
  EXPECT_LT(state.value("episodes", int64_t{0}), straight.total_episodes);

  DqnRunOptions other_seed = interrupted;
  other_seed.seed = 4242;
  DqnTrainer resumed(other_seed);
  auto before = resumed.learner().OnlineWeights();
  ASSERT_TRUE(before.ok());
  auto at = resumed.Resume();
  ASSERT_TRUE(at.ok()) << at.status().message();
  EXPECT_GE(*at, 60);
  EXPECT_EQ(resumed.learner().updates(), updates_at_kill);
  ASSERT_TRUE(resumed.Run(nullptr, nullptr).ok());
  EXPECT_GT(resumed.learner().updates(), updates_at_kill);
  auto got = resumed.learner().OnlineWeights();
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(*got == *expected) << "resumed weights differ from the uninterrupted run";

  // The control: the other seed on its own, from scratch, ends elsewhere.
  DqnRunOptions fresh = other_seed;
  fresh.checkpoint_dir = dir.Join("fresh");
  DqnTrainer unrelated(fresh);
  ASSERT_TRUE(unrelated.Run(nullptr, nullptr).ok());
  auto elsewhere = unrelated.learner().OnlineWeights();
  ASSERT_TRUE(elsewhere.ok());
  EXPECT_FALSE(*elsewhere == *expected);
  EXPECT_FALSE(*before == *expected);
}

}  // namespace
}  // namespace allot::trainer
