// `allot export` and `allot eval` for the navigator.
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/checkpoint_store.h"
#include "tests/core/temp_dir.h"
#include "trainer/dqn/dqn_learner.h"
#include "trainer/dqn/dqn_trainer.h"
#include "trainer/dqn/navigator_eval.h"
#include "trainer/dqn/navigator_export.h"
#include "trainer/dqn/navigator_onnx.h"

namespace allot::trainer {
namespace {

using testing::TempDir;

std::vector<float> States(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> v(0, 3);
  std::vector<float> s(static_cast<size_t>(n) * 7);
  for (auto& x : s) x = static_cast<float>(v(rng));
  return s;
}

// A learner with non-trivial weights (a few updates), its weights written as a run would.
std::string WriteRun(const TempDir& dir, DqnLearner& learner) {
  SampledBatch b;
  b.states = States(8, 1);
  b.next_states = States(8, 2);
  b.actions = {0, 1, 2, 3, 4, 0, 1, 2};
  b.rewards = {1, 0, 1, 0, 1, 0, 1, 0};
  b.dones.assign(8, 0);
  b.discounts.assign(8, 0.9f);
  b.weights.assign(8, 1);
  for (int i = 0; i < 3; ++i) learner.Update(b);
  const std::string run = dir.Join("run");
  std::filesystem::create_directories(run);
  EXPECT_TRUE(WriteFileAtomic(run + "/navigator.safetensors", *learner.OnlineWeights()).ok());
  return run;
}

std::string Slurp(const std::string& path) {
  std::string s;
  EXPECT_TRUE(ReadFile(path, &s).ok()) << path;
  return s;
}

TEST(NavigatorExportTest, OnnxPassesTheCheckerAndComputesTheSameQValues) {
  if (!OnnxExportAvailable()) GTEST_SKIP() << "built without libonnx";
  TempDir dir;
  DqnLearner learner(DqnConfig{}, 3);
  const std::string run = WriteRun(dir, learner);
  ASSERT_EQ(RunExport(run, "onnx", dir.Join("out")), 0);
  const std::string model = Slurp(dir.Join("out") + "/navigator.onnx");
  ASSERT_TRUE(CheckNavigatorOnnx(model, "navigator.onnx").ok());
  // Interpreting the graph reproduces the Q-values of LibTorch and of NavigatorMlp.
  auto states = States(32, 9);
  auto onnx_q = EvalNavigatorOnnx(model, states, 32);
  ASSERT_TRUE(onnx_q.ok()) << onnx_q.status().message();
  auto torch_q = learner.OnlineQ(states);
  ASSERT_EQ(onnx_q->size(), torch_q.size());
  for (size_t i = 0; i < torch_q.size(); ++i) EXPECT_NEAR((*onnx_q)[i], torch_q[i], 1e-5) << i;
  float q[5];
  learner.actor().Forward(std::span<const float>(states.data(), 7), q);
  for (int a = 0; a < 5; ++a) EXPECT_NEAR((*onnx_q)[static_cast<size_t>(a)], q[a], 1e-5);
}

// The project's own ONNX interpreter and exporter could share a misreading of the spec; Microsoft's
// onnxruntime (tests/js/onnx_navigator.js, npm onnxruntime-node) is an independent check.
TEST(NavigatorExportIntegrationTest, OnnxRuntimeComputesTheSameQValues) {
  if (!OnnxExportAvailable()) GTEST_SKIP() << "built without libonnx";
  if (std::system("node --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "node is not installed";
  const std::string js = std::string(ALLOT_SOURCE_DIR) + "/tests/js";
  if (!std::filesystem::exists(js + "/node_modules/onnxruntime-node/package.json")) {
    const std::string install = "ONNXRUNTIME_NODE_INSTALL=skip npm install --prefix '" + js +
                                "' --no-audit --no-fund > /dev/null 2>&1";
    ASSERT_EQ(std::system(install.c_str()), 0) << "npm install failed in " << js;
  }
  TempDir dir;
  DqnLearner learner(DqnConfig{}, 5);
  const std::string run = WriteRun(dir, learner);
  ASSERT_EQ(RunExport(run, "onnx", dir.Join("out")), 0);
  const int n = 64;
  const std::vector<float> states = States(n, 11);
  ASSERT_TRUE(WriteFileAtomic(dir.Join("states.json"),
                              nlohmann::json{{"n", n}, {"dim", 7}, {"values", states}}.dump())
                  .ok());
  const std::string out = dir.Join("ort.out");
  const std::string cmd = "node '" + js + "/onnx_navigator.js' '" + dir.Join("out") +
                          "/navigator.onnx' '" + dir.Join("states.json") + "' > '" + out + "' 2>&1";
  const int rc = std::system(cmd.c_str());
  const std::string text = Slurp(out);
  ASSERT_EQ(rc, 0) << text;
  const auto reply = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(reply.is_object()) << text;
  EXPECT_EQ(reply["input"], "state");
  EXPECT_EQ(reply["output"], "q_values");
  EXPECT_EQ(reply["dims"], nlohmann::json::array({n, 5}));
  const std::vector<float> ort_q = reply["q"].get<std::vector<float>>();
  const std::vector<float> torch_q = learner.OnlineQ(states);
  ASSERT_EQ(ort_q.size(), torch_q.size());
  for (size_t i = 0; i < torch_q.size(); ++i) EXPECT_NEAR(ort_q[i], torch_q[i], 1e-5) << i;
}

TEST(NavigatorExportTest, CheckerRejectsABrokenGraph) {
  if (!OnnxExportAvailable()) GTEST_SKIP() << "built without libonnx";
  DqnLearner learner(DqnConfig{}, 3);
  auto w = ParseNavigatorWeights(*learner.OnlineWeights(), "w");
  ASSERT_TRUE(w.ok());
  auto model = BuildNavigatorOnnx(*w);
  ASSERT_TRUE(model.ok());
  // Rename an initializer: the graph now reads an undefined value.
  std::string broken = *model;
  const auto at = broken.find("adv_out.bias");
  ASSERT_NE(at, std::string::npos);
  broken[at] = 'X';
  EXPECT_FALSE(CheckNavigatorOnnx(broken, "broken").ok());
  EXPECT_FALSE(CheckNavigatorOnnx("not a model", "junk").ok());
}

TEST(NavigatorExportTest, SafetensorsWithSpec) {
  TempDir dir;
  DqnLearner learner(DqnConfig{}, 4);
  const std::string run = WriteRun(dir, learner);
  ASSERT_EQ(RunExport(run, "safetensors", dir.Join("st")), 0);
  auto spec = nlohmann::json::parse(Slurp(dir.Join("st") + "/navigator.json"));
  EXPECT_EQ(spec["parameters"], 2566);
  EXPECT_EQ(spec["input"]["offset"], 1.5);
  EXPECT_EQ(spec["input"]["scale"], 1.5);
  EXPECT_EQ(spec["actions"],
            (std::vector<std::string>{"reason", "decompose", "debate", "refine", "terminate"}));
  EXPECT_EQ(spec["tensors"]["adv_out.weight"]["shape"], (std::vector<int>{5, 32}));
  // The exported weights load back into the same navigator.
  auto back = LoadNavigatorWeights(dir.Join("st"));
  ASSERT_TRUE(back.ok()) << back.status().message();
  auto mlp = back->Mlp();
  ASSERT_TRUE(mlp.ok());
  auto states = States(4, 3);
  for (int i = 0; i < 4; ++i) {
    std::span<const float> s(states.data() + i * 7, 7);
    EXPECT_EQ(mlp->Greedy(s), learner.Greedy(s));
  }
}

TEST(NavigatorExportTest, FindsWeightsInCheckpointsAndRejectsBadInput) {
  TempDir dir;
  DqnLearner learner(DqnConfig{}, 6);
  CheckpointStore store(dir.Join("run/checkpoints"), 0);
  ASSERT_TRUE(store.Save(10, [&](const std::string& d) { return learner.Save(d); }).ok());
  // A run directory without a final navigator: the newest checkpoint's online net.
  auto w = LoadNavigatorWeights(dir.Join("run"));
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->parameter_count(), 2566);
  auto mlp = w->Mlp();
  ASSERT_TRUE(mlp.ok());
  auto states = States(1, 1);
  float a[5], b[5];
  mlp->Forward(states, a);
  learner.actor().Forward(states, b);
  for (int i = 0; i < 5; ++i) EXPECT_FLOAT_EQ(a[i], b[i]);

  EXPECT_NE(RunExport(dir.Join("run"), "pickle", dir.Join("x")), 0);
  auto missing = LoadNavigatorWeights(dir.Join("nowhere"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("nowhere"), std::string::npos);
  ASSERT_TRUE(WriteFileAtomic(dir.Join("bad.safetensors"), "xxxxxxxx").ok());
  EXPECT_FALSE(LoadNavigatorWeights(dir.Join("bad.safetensors")).ok());
}

TEST(NavigatorEvalTest, SelfConsistencyTakesTheMajorityOverEquivalentAnswers) {
  std::vector<std::string> answers = {"1/2", "0.75", "\\frac{1}{2}"};
  auto vote = SelfConsistentAnswer(3, [&](int i) { return answers[static_cast<size_t>(i)]; });
  ASSERT_TRUE(vote.found);
  EXPECT_EQ(vote.votes, 2);
  EXPECT_EQ(vote.answer, "1/2");
  EXPECT_EQ(BlockPattern({0, 3, 4}), "Reason-Refine");
}

TEST(NavigatorEvalIntegrationTest, TrainedNavigatorSolvesTheChainAndVotingHelps) {
  at::set_num_threads(1);
  DqnRunOptions o;
  o.dqn.epsilon_decay = 0.998;
  o.dqn.epsilon_min = 0.02;
  o.total_episodes = 500;
  o.seed = 1;
  DqnTrainer trainer(o);
  ASSERT_TRUE(trainer.Run(nullptr, nullptr).ok());
  NavigatorEvalOptions eval;
  eval.episodes = 50;
  auto greedy = EvaluateNavigatorOnChain(trainer.learner().actor(), o.env, eval);
  EXPECT_DOUBLE_EQ(greedy.trail_accuracy, 1.0);
  EXPECT_DOUBLE_EQ(greedy.voted_accuracy, 1.0);
  EXPECT_NEAR(greedy.mean_return, greedy.optimal_return, 1e-5);
  EXPECT_EQ(greedy.patterns.at(3).at("Decompose-Reason-Refine"), 150);
  // Noisy trails: the majority over 3 trails is right more often than a single trail.
  eval.epsilon = 0.15;
  eval.episodes = 400;
  auto noisy = EvaluateNavigatorOnChain(trainer.learner().actor(), o.env, eval);
  EXPECT_LT(noisy.trail_accuracy, 1.0);
  EXPECT_GT(noisy.voted_accuracy, noisy.trail_accuracy);
  const std::string text = FormatEvalReport(noisy);
  EXPECT_NE(text.find("major 3-step pattern: Decompose-Reason-Refine"), std::string::npos) << text;
}

}  // namespace
}  // namespace allot::trainer
