// The chain env over the rollout protocol and the actor/learner split (Ape-X) of the DQN.
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <atomic>
#include <span>

#include "envs/synthetic/chain_env.h"
#include "rollout/trajectory_convert.h"
#include "rollout/worker.h"
#include "tests/rollout/rollout_test_util.h"
#include "trainer/dqn/dqn_distributed.h"
#include "trainer/dqn/dqn_learner.h"
#include "trainer/dqn/dqn_trainer.h"

namespace allot::trainer {
namespace {

namespace rt = envs::runtime;

std::shared_ptr<const rt::PolicySnapshot> Snapshot(const DqnLearner& learner, uint64_t v) {
  auto s = std::make_shared<rt::PolicySnapshot>();
  s->version = v;
  s->kind = rt::PolicySnapshot::Kind::kQnetWeights;
  s->bytes = *learner.OnlineWeights();
  return s;
}

// One episode as a worker runs it: the request's input, the policy, the wire trajectory.
v1::Trajectory RunEpisode(envs::ChainEnv& env, std::shared_ptr<const rt::PolicySnapshot> policy,
                          float epsilon, uint64_t seed) {
  v1::EpisodeRequest req;
  req.set_episode_id("e");
  req.set_env("chain");
  req.set_epsilon(epsilon);
  req.set_seed(seed);
  rt::EpisodeInput input = rollout::ToEpisodeInput(req);
  input.policy = std::move(policy);
  auto t = env.Run(input);
  EXPECT_TRUE(t.ok());
  return t.ok() ? rollout::ToProto(*t) : v1::Trajectory();
}

TEST(ChainEnvTest, GreedyEpisodeFollowsThePublishedNavigator) {
  auto env = envs::ChainEnv::Create("");
  ASSERT_TRUE(env.ok());
  DqnLearner learner(DqnConfig{}, 5);
  auto traj = RunEpisode(**env, Snapshot(learner, 3), 0.0f, 1);
  EXPECT_EQ(traj.failure().reason(), v1::FAILURE_REASON_NONE);
  EXPECT_EQ(traj.policy_version(), 3u);
  ASSERT_GE(traj.transitions_size(), 1);
  double ret = 0;
  for (int i = 0; i < traj.transitions_size(); ++i) {
    const auto& t = traj.transitions(i);
    ASSERT_EQ(t.state_size(), 7);
    ASSERT_EQ(t.next_state_size(), 7);
    EXPECT_EQ(t.num_actions(), 5u);
    EXPECT_EQ(t.done(), i + 1 == traj.transitions_size());
    std::vector<float> s(t.state().begin(), t.state().end());
    // Greedy, except where RLoT's forced Terminate overrides the navigator.
    if (!t.done()) {
      EXPECT_EQ(static_cast<int>(t.action()), learner.Greedy(s)) << i;
    }
    if (i > 0) {
      const auto& prev = traj.transitions(i - 1);
      EXPECT_TRUE(
          std::equal(prev.next_state().begin(), prev.next_state().end(), t.state().begin()));
    }
    ret += t.reward();
  }
  EXPECT_NEAR(traj.reward(), ret, 1e-6);
  EXPECT_FALSE(traj.info().at("blocks").empty());
  // Deterministic for a seed, and the navigator is parsed once per version (cached).
  auto again = RunEpisode(**env, Snapshot(learner, 3), 0.0f, 1);
  EXPECT_EQ(again.info().at("blocks"), traj.info().at("blocks"));
  EXPECT_EQ(again.reward(), traj.reward());
}

TEST(ChainEnvTest, ActsUniformlyWithoutPolicyOrAtEpsilonOne) {
  auto env = envs::ChainEnv::Create("{max_steps: 50}");
  ASSERT_TRUE(env.ok());
  std::array<int, 5> counts{};
  for (uint64_t seed = 0; seed < 40; ++seed) {
    auto traj = RunEpisode(**env, nullptr, 0.0f, seed);
    for (const auto& t : traj.transitions()) ++counts[t.action()];
  }
  for (int a = 0; a < 4; ++a) EXPECT_GT(counts[static_cast<size_t>(a)], 5) << a;
  // With a policy and epsilon 1 the episode differs between seeds.
  DqnLearner learner(DqnConfig{}, 5);
  std::set<std::string> blocks;
  for (uint64_t seed = 0; seed < 20; ++seed)
    blocks.insert(RunEpisode(**env, Snapshot(learner, 1), 1.0f, seed).info().at("blocks"));
  EXPECT_GT(blocks.size(), 3u);
}

TEST(ChainEnvTest, RejectsBadConfigAndBadWeights) {
  EXPECT_FALSE(envs::ChainEnv::Create("{sequence: [1, 4]}").ok())
      << "terminate inside the sequence";
  EXPECT_FALSE(envs::ChainEnv::Create("{max_stepz: 3}").ok()) << "unknown key";
  auto env = envs::ChainEnv::Create(envs::ChainEnvConfigText(envs::ChainMdpConfig{}));
  ASSERT_TRUE(env.ok());
  auto junk = std::make_shared<rt::PolicySnapshot>();
  junk->version = 2;
  junk->kind = rt::PolicySnapshot::Kind::kQnetWeights;
  junk->bytes = "garbage";
  auto traj = RunEpisode(**env, junk, 0.0f, 1);
  EXPECT_EQ(traj.failure().reason(), v1::FAILURE_REASON_ENV_ERROR);
  EXPECT_NE(traj.failure().message().find("policy version 2"), std::string::npos);
}

DqnRunOptions DistributedOptions() {
  DqnRunOptions o;
  o.dqn.distributed = true;
  o.dqn.epsilon_decay = 0.998;
  o.dqn.epsilon_min = 0.02;
  o.dqn.episodes_in_flight = 4;
  o.total_episodes = 700;
  o.seed = 7;
  return o;
}

// Learner + two in-process rollout workers (same gRPC protocol, in-process channels) learn the
// one rewarded block sequence.
TEST(DqnDistributedIntegrationTest, InProcessActorsReachTheOptimalPolicy) {
  at::set_num_threads(1);
  rollout::RolloutConfig rc;
  rc.in_process_workers = 2;
  DistributedDqnTrainer trainer(DistributedOptions(), rc);
  auto summary = trainer.Run(nullptr, nullptr);
  ASSERT_TRUE(summary.ok()) << summary.status().message();
  EXPECT_EQ(summary->episodes, 700);
  std::vector<int> actions;
  const double greedy =
      GreedyChainReturn(envs::ChainMdpConfig{}, trainer.learner().actor(), &actions);
  EXPECT_NEAR(greedy, envs::ChainMdp(envs::ChainMdpConfig{}).OptimalReturn(), 1e-5);
  EXPECT_EQ(actions, (std::vector<int>{1, 0, 3, 4}));
  // Weights went out every publish_every updates; both actors ran episodes.
  EXPECT_GE(trainer.publications(), trainer.learner().updates() / 10);
  EXPECT_EQ(trainer.worker_ids().size(), 2u);
  EXPECT_EQ(trainer.failed_episodes(), 0);
  EXPECT_LT(trainer.learner().epsilon(), 0.1) << "epsilon advanced by the workers' env steps";
}

// The same with a real `rollout-worker` process over TCP.
TEST(DqnDistributedIntegrationTest, RemoteWorkerProcess) {
  at::set_num_threads(1);
  auto worker = rollout::testing::WorkerProcess::Start("threads: 2");
  ASSERT_NE(worker, nullptr);
  ASSERT_FALSE(worker->address().empty()) << "worker process did not start";
  rollout::RolloutConfig rc;
  rc.dispatcher.workers = {worker->address()};
  DistributedDqnTrainer trainer(DistributedOptions(), rc);
  auto summary = trainer.Run(nullptr, nullptr);
  ASSERT_TRUE(summary.ok()) << summary.status().message();
  EXPECT_NEAR(summary->greedy_return, envs::ChainMdp(envs::ChainMdpConfig{}).OptimalReturn(), 1e-5);
  ASSERT_EQ(trainer.worker_ids().size(), 1u);
  EXPECT_NE(trainer.worker_ids()[0].find(':'), std::string::npos) << trainer.worker_ids()[0];
}

// The chain env with every 4th episode's first transition broken in one of three ways, as a
// worker of another build (a navigator of another shape) might send it.
class CorruptingChainEnv : public rt::Env {
 public:
  explicit CorruptingChainEnv(std::unique_ptr<envs::ChainEnv> inner) : inner_(std::move(inner)) {}
  Result<rt::Trajectory> Run(const rt::EpisodeInput& input) override {
    ALLOT_ASSIGN_OR_RETURN(rt::Trajectory t, inner_->Run(input));
    const int n = count_++;
    if (n % 4 == 0 && !t.transitions.empty()) {
      rt::Transition& p = t.transitions[0];
      // Each passes the protocol's own validation (which would turn it into a failed
      // episode) but does not fit this learner's navigator.
      switch ((n / 4) % 3) {
        case 0:  // one feature too many (dqn.state_dim is 7)
          p.state.push_back(1.0f);
          if (!p.next_state.empty()) p.next_state.push_back(1.0f);
          break;
        case 1:  // an action beyond dqn.num_actions (5), within the transition's own bound
          p.num_actions = 100;
          p.action = 99;
          break;
        default:
          p.num_actions = 6;
          p.action = 5;
          break;
      }
    }
    return t;
  }

 private:
  std::unique_ptr<envs::ChainEnv> inner_;
  std::atomic<int> count_{0};
};

// One malformed transition used to end the whole run with an error.
TEST(DqnDistributedIntegrationTest, MalformedTransitionsAreDroppedAndCounted) {
  at::set_num_threads(1);
  rollout::EnvRegistry registry;
  registry.Register("chain", [](const std::string& config) -> Result<std::unique_ptr<rt::Env>> {
    ALLOT_ASSIGN_OR_RETURN(auto inner, envs::ChainEnv::Create(config));
    return std::unique_ptr<rt::Env>(std::make_unique<CorruptingChainEnv>(std::move(inner)));
  });
  rollout::WorkerConfig wc;
  wc.listen = "127.0.0.1:0";
  wc.metrics_listen = "";
  wc.threads = 2;
  auto worker = rollout::WorkerServer::Start(wc, &registry);
  ASSERT_TRUE(worker.ok()) << worker.status().message();
  DqnRunOptions o = DistributedOptions();
  o.total_episodes = 120;
  rollout::RolloutConfig rc;
  rc.dispatcher.workers = {(*worker)->address()};
  DistributedDqnTrainer trainer(o, rc);
  auto summary = trainer.Run(nullptr, nullptr);
  (*worker)->Shutdown();
  ASSERT_TRUE(summary.ok()) << summary.status().message();
  EXPECT_EQ(summary->episodes, 120);
  // About one in four of the ~160 episodes run was dropped.
  EXPECT_GE(trainer.malformed_episodes(), 20);
  EXPECT_LE(trainer.malformed_episodes(), 60);
  EXPECT_EQ(trainer.failed_episodes(), 0);
}

// The chain env with every episode failing at its second decision, as an RLoT episode whose
// block runs away: the env scored it (the failing decision terminal, reward -1, format error).
// Every third one fails on its endpoint instead, which nothing scores.
class FailingChainEnv : public rt::Env {
 public:
  explicit FailingChainEnv(std::unique_ptr<envs::ChainEnv> inner) : inner_(std::move(inner)) {}
  Result<rt::Trajectory> Run(const rt::EpisodeInput& input) override {
    ALLOT_ASSIGN_OR_RETURN(rt::Trajectory t, inner_->Run(input));
    if (count_++ % 3 == 2) {
      t.failure = {rt::FailureReason::kEndpointError, "endpoint down"};
      return t;
    }
    if (t.transitions.size() > 2) t.transitions.resize(2);
    rt::Transition& last = t.transitions.back();
    last.reward = -1.0f;
    last.done = true;
    last.next_state.clear();
    t.failure = {rt::FailureReason::kFormatError, "runaway output"};
    return t;
  }

 private:
  std::unique_ptr<envs::ChainEnv> inner_;
  std::atomic<int> count_{0};
};

// Scored policy failures reach replay, the failing decision included; endpoint failures are
// dropped and counted by reason. (The learner used to drop every failed episode: this run then
// ended with "100 episodes failed in a row" and nothing reached replay.)
TEST(DqnDistributedIntegrationTest, PolicyFailuresAreTrainedOnAndInfrastructureOnesDropped) {
  at::set_num_threads(1);
  rollout::EnvRegistry registry;
  registry.Register("chain", [](const std::string& config) -> Result<std::unique_ptr<rt::Env>> {
    ALLOT_ASSIGN_OR_RETURN(auto inner, envs::ChainEnv::Create(config));
    return std::unique_ptr<rt::Env>(std::make_unique<FailingChainEnv>(std::move(inner)));
  });
  rollout::WorkerConfig wc;
  wc.listen = "127.0.0.1:0";
  wc.metrics_listen = "";
  wc.threads = 2;
  auto worker = rollout::WorkerServer::Start(wc, &registry);
  ASSERT_TRUE(worker.ok()) << worker.status().message();
  DqnRunOptions o = DistributedOptions();
  o.total_episodes = 60;
  rollout::RolloutConfig rc;
  rc.dispatcher.workers = {(*worker)->address()};
  DistributedDqnTrainer trainer(o, rc);
  auto summary = trainer.Run(nullptr, nullptr);
  (*worker)->Shutdown();
  ASSERT_TRUE(summary.ok()) << summary.status().message();
  EXPECT_EQ(summary->episodes, 60);
  // Every scored failure's transitions: the failing decision (one per episode) and, unless
  // the episode's first decision was Terminate, the one before it.
  EXPECT_GT(trainer.learner().replay().size(), 60u);
  EXPECT_LE(trainer.learner().replay().size(), 120u);
  const auto& failures = trainer.failures();
  ASSERT_EQ(failures.count("format_error"), 1u);
  EXPECT_EQ(failures.at("format_error"), 60);
  ASSERT_EQ(failures.count("endpoint_error"), 1u);
  EXPECT_GE(failures.at("endpoint_error"), 15);
  EXPECT_EQ(trainer.dropped_failures(), failures.at("endpoint_error"));
  EXPECT_EQ(trainer.failed_episodes(), 60 + failures.at("endpoint_error"));
}

TEST(DqnDistributedIntegrationTest, UnreachableWorkerIsReportedNotHung) {
  DqnRunOptions o = DistributedOptions();
  o.total_episodes = 5;
  rollout::RolloutConfig rc;
  rc.dispatcher.workers = {"127.0.0.1:1"};
  DistributedDqnTrainer trainer(o, rc);
  trainer.set_idle_timeout(std::chrono::seconds(2));
  auto r = trainer.Run(nullptr, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("0 connected"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace allot::trainer
