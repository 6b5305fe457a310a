// DeepTool's data tools: step-wise instances (Sec. 2.3.1, Eq. 5) and MOSAIC perturbations
// (Sec. 2.1, Eq. 3-4; probability 0.1 for SFT and 0.2 for RL data): expansion, determinism,
// rates, and, against the real sandbox, that every corrupted action yields a traceback.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "envs/deeptool/deeptool_env.h"
#include "envs/deeptool/mosaic.h"
#include "envs/deeptool/step_instances.h"
#include "tests/core/temp_dir.h"
#include "tools/rstkit.h"

namespace allot::envs::deeptool {
namespace {

using nlohmann::json;

ExpertTrajectory Sample(const std::string& id = "t", int code_steps = 2) {
  ExpertTrajectory t;
  t.id = id;
  t.question = "What is 6*7?";
  t.answer = "42";
  for (int i = 0; i < code_steps; ++i) {
    t.steps.push_back({"step " + std::to_string(i), "x = 6\nfor i in range(2):\n    print(x * 7)",
                       false, "42\n42", ""});
  }
  t.steps.push_back({"so 42", "\\boxed{42}", true, "", ""});
  return t;
}

// A runner that fails (as the sandbox would) for everything but the original program.
CodeRunner FailingRunner(std::vector<std::string>* seen = nullptr) {
  return [seen](const std::string& code) -> Result<CodeOutcome> {
    if (seen != nullptr) seen->push_back(code);
    return CodeOutcome{false, "Traceback (most recent call last):\nSyntaxError: scripted"};
  };
}

TEST(DeepToolStepInstancesTest, EveryStepBecomesAnInstanceWithTheGroundTruthHistory) {
  ExpertTrajectory t = Sample("traj", 2);
  t.extra["source"] = "openr1";
  std::vector<json> out = ExpandStepInstances(t);
  ASSERT_EQ(out.size(), 3u);
  for (size_t k = 0; k < out.size(); ++k) {
    EXPECT_EQ(out[k]["id"], "traj#" + std::to_string(k + 1));
    EXPECT_EQ(out[k]["step"], k + 1);
    EXPECT_EQ(out[k]["question"], t.question);
    EXPECT_EQ(out[k]["answer"], "42");
    EXPECT_EQ(out[k]["source"], "openr1");
    ASSERT_EQ(out[k]["history"].size(), k);
    for (size_t i = 0; i < k; ++i) EXPECT_EQ(out[k]["history"][i], StepToJson(t.steps[i]));
    ASSERT_EQ(out[k]["reference_steps"].size(), 1u);
    EXPECT_EQ(out[k]["reference_steps"][0], StepToJson(t.steps[k]));
  }
  EXPECT_EQ(out[2]["reference_steps"][0]["answer"], "\\boxed{42}");

  // Each instance is a deeptool env item: history and target come back as parsed.
  auto item = ParseDeepToolItem(out[2].dump(), rewards::AnswerFormat::kBoxed);
  ASSERT_TRUE(item.ok()) << item.status().ToString();
  EXPECT_EQ(item->history.size(), 2u);
  EXPECT_EQ(item->history[1].observation, "42\n42");
  ASSERT_EQ(item->reference_steps.size(), 1u);
  EXPECT_TRUE(item->reference_steps[0].terminal);
}

// DeepTool's parser took "problem" alone beside "question", and errors named no file or line.
TEST(DeepToolItemTest, TakesEveryEnvsFieldNamesAndNamesTheSourceInErrors) {
  auto item = ParseDeepToolItem(R"({"prompt": "Q", "reference": "4", "answer_format": "text"})",
                                rewards::AnswerFormat::kNumber);
  ASSERT_TRUE(item.ok()) << item.status().ToString();
  EXPECT_EQ(item->question, "Q");
  EXPECT_EQ(item->reference, "4");
  EXPECT_EQ(item->format, rewards::AnswerFormat::kNumber);
  auto bad =
      ParseDeepToolItem(R"({"question": "Q", "answer": "4", "steps": 3, "source": "s.jsonl:2"})",
                        rewards::AnswerFormat::kBoxed);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("s.jsonl:2: steps: not a list"), std::string::npos)
      << bad.status().message();
}

TEST(DeepToolStepInstancesTest, IntrinsicallyCorruptedStepsAreHistoryButNeverTargets) {
  ExpertTrajectory t = Sample("t", 1);
  t.steps.insert(t.steps.begin(), {"try", "print((", false, "SyntaxError", "intrinsic"});
  std::vector<json> out = ExpandStepInstances(t);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0]["id"], "t#2");
  EXPECT_EQ(out[0]["history"][0]["perturbation"], "intrinsic");
  EXPECT_EQ(ExpandStepInstances(t, {.skip_intrinsic_targets = false}).size(), 3u);
}

TEST(DeepToolStepInstancesTest, FilesRoundTripAndBadLinesNameFileAndLine) {
  allot::testing::TempDir dir;
  const std::string in =
      dir.Write("expert.jsonl", TrajectoryToJson(Sample("a", 1)).dump() + "\n\n" +
                                    TrajectoryToJson(Sample("b", 3)).dump() + "\n");
  auto stats = WriteStepInstances(in, dir.Join("out.jsonl"));
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->trajectories, 2);
  EXPECT_EQ(stats->instances, 2 + 4);
  std::ifstream f(dir.Join("out.jsonl"));
  std::string line;
  int lines = 0;
  while (std::getline(f, line)) ++lines;
  EXPECT_EQ(lines, 6);

  const std::string bad = dir.Write(
      "bad.jsonl", TrajectoryToJson(Sample()).dump() + "\n" +
                       R"({"question": "q", "answer": "1", "steps": [{"think": "t", "code": 3}]})");
  auto err = WriteStepInstances(bad, dir.Join("out2.jsonl"));
  ASSERT_FALSE(err.ok());
  EXPECT_NE(err.status().message().find("bad.jsonl:2"), std::string::npos);
  EXPECT_NE(err.status().message().find("steps[0].code"), std::string::npos);
}

TEST(DeepToolStepInstancesTest, SftRecordsPutHistoryAndObservationsInThePromptOnly) {
  SftLayout layout;
  layout.tir_template = "Solve: {{question}}\n";
  ExpertTrajectory t = Sample("s", 1);
  auto records = StepSftRecords(t, layout);
  ASSERT_TRUE(records.ok()) << records.status().ToString();
  ASSERT_EQ(records->size(), 2u);
  EXPECT_EQ((*records)[0]["prompt"], "Solve: What is 6*7?\n");
  EXPECT_EQ((*records)[0]["completion"],
            "<think>\nstep 0\n</think>\n<code>\nx = 6\nfor i in range(2):\n    print(x * 7)\n"
            "</code>");
  EXPECT_EQ((*records)[1]["prompt"], "Solve: What is 6*7?\n" +
                                         (*records)[0]["completion"].get<std::string>() +
                                         "\n<observation>\n42\n42\n</observation>\n");
  EXPECT_EQ((*records)[1]["completion"],
            "<think>\nso 42\n</think>\n<answer>\n\\boxed{42}\n</answer>");
  layout.tir_template = "{{missing}}";
  EXPECT_FALSE(StepSftRecords(t, layout).ok());
}

TEST(DeepToolMosaicTest, TheDefaultsAreThePapersProbabilities) {
  EXPECT_EQ(kMosaicSftProbability, 0.1);
  EXPECT_EQ(kMosaicRlProbability, 0.2);
  EXPECT_EQ(MosaicConfig{}.probability, 0.1);
}

TEST(DeepToolMosaicTest, SeededPerturbationIsDeterministicAndOrderIndependent) {
  MosaicConfig c;
  c.probability = 0.5;
  std::vector<json> a, b;
  for (uint64_t i = 0; i < 50; ++i) {
    auto p = Perturb(Sample(std::to_string(i), 4), i, c, FailingRunner());
    ASSERT_TRUE(p.ok());
    a.push_back(TrajectoryToJson(*p));
  }
  for (uint64_t i = 50; i-- > 0;) {  // reverse order: same result per trajectory
    auto p = Perturb(Sample(std::to_string(i), 4), i, c, FailingRunner());
    ASSERT_TRUE(p.ok());
    b.insert(b.begin(), TrajectoryToJson(*p));
  }
  EXPECT_EQ(a, b);
  c.seed = 7;
  int differing = 0;
  for (uint64_t i = 0; i < 50; ++i) {
    auto p = Perturb(Sample(std::to_string(i), 4), i, c, FailingRunner());
    ASSERT_TRUE(p.ok());
    differing += TrajectoryToJson(*p) != a[i];
  }
  EXPECT_GT(differing, 10);
}

TEST(DeepToolMosaicTest, RatesFollowTheProbabilityAndTheIntrinsicShare) {
  for (double p : {kMosaicSftProbability, kMosaicRlProbability}) {
    MosaicConfig c;
    c.probability = p;
    MosaicStats stats;
    for (uint64_t i = 0; i < 4000; ++i) {
      auto out = Perturb(Sample("x", 5), i, c, FailingRunner(), &stats);
      ASSERT_TRUE(out.ok());
      // Every perturbation adds exactly one (failed) step; the answer step is never touched.
      size_t perturbed = 0;
      for (const ExpertStep& s : out->steps) perturbed += !s.perturbation.empty();
      ASSERT_EQ(out->steps.size(), 6u + perturbed);
      EXPECT_TRUE(out->steps.back().terminal);
      EXPECT_TRUE(out->steps.back().perturbation.empty());
    }
    ASSERT_EQ(stats.code_steps, 4000 * 5);
    const double rate = static_cast<double>(stats.intrinsic + stats.extrinsic) / stats.code_steps;
    EXPECT_NEAR(rate, p, 0.01) << "p = " << p;  // 20000 draws: sd <= 0.003
    const double share = static_cast<double>(stats.intrinsic) /
                         static_cast<double>(stats.intrinsic + stats.extrinsic);
    EXPECT_NEAR(share, 0.5, 0.05);
  }
  MosaicConfig none;
  none.probability = 0.0;
  auto same = Perturb(Sample(), 3, none, FailingRunner());
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(TrajectoryToJson(*same), TrajectoryToJson(Sample()));
  none.probability = 1.5;
  EXPECT_FALSE(Perturb(Sample(), 3, none, FailingRunner()).ok());
}

TEST(DeepToolMosaicTest, IntrinsicCorruptsTheActionAndExtrinsicKeepsItButFailsTheRun) {
  MosaicConfig c;
  c.probability = 1.0;
  c.intrinsic_share = 1.0;
  std::vector<std::string> seen;
  auto p = Perturb(Sample("t", 1), 0, c, FailingRunner(&seen));
  ASSERT_TRUE(p.ok());
  ASSERT_EQ(p->steps.size(), 3u);
  const ExpertStep& failed = p->steps[0];
  EXPECT_EQ(failed.perturbation, "intrinsic");
  EXPECT_NE(failed.action, Sample().steps[0].action);
  EXPECT_EQ(failed.observation, "Traceback (most recent call last):\nSyntaxError: scripted");
  EXPECT_EQ(seen, (std::vector<std::string>{failed.action}));  // the failing run is the one kept
  EXPECT_EQ(p->steps[1].action, Sample().steps[0].action);     // then the expert's step
  EXPECT_EQ(p->steps[1].think.rfind(c.intrinsic_note, 0), 0u);

  c.intrinsic_share = 0.0;
  p = Perturb(Sample("t", 1), 0, c, FailingRunner());
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->steps[0].perturbation, "extrinsic");
  EXPECT_EQ(p->steps[0].action, Sample().steps[0].action);
  EXPECT_NE(
      std::find(c.extrinsic_failures.begin(), c.extrinsic_failures.end(), p->steps[0].observation),
      c.extrinsic_failures.end());
  EXPECT_EQ(p->steps[1].think.rfind(c.extrinsic_note, 0), 0u);
}

TEST(DeepToolMosaicTest, ACandidateThatRunsCleanIsSkippedForOneThatFails) {
  const std::string code = "x = 6\nfor i in range(2):\n    print(x * 7)";
  std::vector<std::string> candidates = CorruptedCandidates(code, 1);
  ASSERT_GE(candidates.size(), 3u);
  for (const std::string& cand : candidates) EXPECT_NE(cand, code);
  EXPECT_EQ(candidates.back(), code + "\nprint((");
  MosaicConfig c;
  c.probability = 1.0;
  c.intrinsic_share = 1.0;
  // Only the always-failing last candidate fails here.
  CodeRunner runner = [](const std::string& s) -> Result<CodeOutcome> {
    return CodeOutcome{s.find("print((") == std::string::npos ? true : false, "SyntaxError"};
  };
  auto p = Perturb(Sample("t", 1), 0, c, runner);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->steps[0].action.substr(p->steps[0].action.size() - 8), "\nprint((");
  // A runner that cannot run at all fails the call.
  CodeRunner broken = [](const std::string&) -> Result<CodeOutcome> {
    return Unavailable("sandbox down");
  };
  EXPECT_FALSE(Perturb(Sample("t", 1), 0, c, broken).ok());
}

// Against the real bubblewrap sandbox: each corrupted candidate produces a Python traceback.
TEST(DeepToolMosaicSandboxIntegrationTest, EveryCorruptedCandidateFailsWithATraceback) {
  tools::ToolsConfig tc;
  tc.arithmetic = tc.symbolic = tc.statistics = false;
  tc.sandbox.wall_timeout_s = 5;
  auto reg = tools::BuildRstKit(tc);
  ASSERT_TRUE(reg.ok()) << reg.status().ToString();
  const std::string code = "def f(x):\n    return x * 7\nfor i in range(2):\n    print(f(6))";
  for (const std::string& cand : CorruptedCandidates(code, 0)) {
    tools::ToolResult r = (*reg)->Call({"execute_python", {{"code", cand}}});
    ASSERT_TRUE(r.output.is_object()) << r.output.dump();
    EXPECT_FALSE(r.ok) << cand;
    EXPECT_NE(ObservationText(r, 4096).find("Error"), std::string::npos) << cand;
  }
  tools::ToolResult ok = (*reg)->Call({"execute_python", {{"code", code}}});
  EXPECT_TRUE(ok.ok);
  EXPECT_EQ(ObservationText(ok, 4096), "42\n42");
}

}  // namespace
}  // namespace allot::envs::deeptool
