// trainer.zero_stage through the real `allot` binary: refused, naming the key, where it has no
// effect (the dqn engine, the grpo engine's LoRA learner, sft with LoRA) and out of range, before
// a run directory exists; and `allot sft --nproc 2` with ZeRO stage 2 as real rank processes.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <torch/torch.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/checkpoint_store.h"
#include "models/causal_lm.h"
#include "models/tokenizer/byte_tokenizer.h"
#include "tests/models/tiny_model.h"

namespace allot::trainer {
namespace {

namespace fs = std::filesystem;

struct Outcome {
  int code = -1;
  std::string output;
};

Outcome Allot(const std::string& args) {
  const std::string cmd = std::string(ALLOT_BINARY_DIR) + "/apps/allot " + args + " 2>&1";
  Outcome out;
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (pipe == nullptr) return out;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) out.output.append(buf.data(), n);
  const int status = ::pclose(pipe);
  out.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

bool Has(const Outcome& o, const std::string& text) {
  return o.output.find(text) != std::string::npos;
}

class ZeroConfigIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = models::testing::MakeTempDir("zero_config");
    runs_ = dir_ + "/runs";
    std::ofstream(dir_ + "/sft.yaml") << "trainer:\n  algorithm: sft\nsft:\n  batch_size: 2\n";
    std::ofstream(dir_ + "/grpo.yaml") << "trainer:\n  algorithm: grpo\ngrpo:\n  group_size: 4\n";
    std::ofstream(dir_ + "/dqn.yaml") << "trainer:\n  algorithm: dqn\n  total_steps: 3\n";
  }
  std::string Cmd(const std::string& verb, const std::string& recipe) const {
    return verb + " -c " + dir_ + "/" + recipe + " --set run.output_dir=" + runs_;
  }
  std::string dir_, runs_;
};

TEST_F(ZeroConfigIntegrationTest, ZeroStageWhereItHasNoEffectIsRefusedNamingTheKey) {
  auto lora =
      Allot(Cmd("sft", "sft.yaml") + " --set sft.lora.enabled=true --set trainer.zero_stage=1");
  EXPECT_EQ(lora.code, 1) << lora.output;
  EXPECT_TRUE(Has(lora, "--set trainer.zero_stage")) << lora.output;
  EXPECT_TRUE(Has(lora, "sft.lora")) << lora.output;

  auto grpo = Allot(Cmd("train", "grpo.yaml") + " --set trainer.zero_stage=2");
  EXPECT_EQ(grpo.code, 1) << grpo.output;
  EXPECT_TRUE(Has(grpo, "trainer.zero_stage")) << grpo.output;
  EXPECT_TRUE(Has(grpo, "grpo.lora")) << grpo.output;

  auto dqn = Allot(Cmd("train", "dqn.yaml") + " --set trainer.zero_stage=1");
  EXPECT_EQ(dqn.code, 1) << dqn.output;
  EXPECT_TRUE(Has(dqn, "trainer.zero_stage")) << dqn.output;

  EXPECT_FALSE(fs::exists(runs_)) << "a refused config created " << runs_;

  // The control: full-parameter sft reads the key (the run then fails for want of a model,
  // which is not a config-strictness error).
  auto full = Allot(Cmd("sft", "sft.yaml") + " --set trainer.zero_stage=2");
  EXPECT_FALSE(Has(full, "trainer.zero_stage")) << full.output;
}

TEST_F(ZeroConfigIntegrationTest, ZeroStageOutOfRangeIsRefusedNamingTheKey) {
  auto a = Allot(Cmd("sft", "sft.yaml") + " --set trainer.zero_stage=3");
  EXPECT_EQ(a.code, 1) << a.output;
  EXPECT_TRUE(Has(a, "trainer.zero_stage")) << a.output;
  EXPECT_TRUE(Has(a, "out of range")) << a.output;
  EXPECT_FALSE(fs::exists(runs_));
}

std::vector<at::Tensor> ModelWeights(const std::string& dir) {
  std::vector<at::Tensor> out;
  auto model = models::CausalLMImpl::Load(dir);
  EXPECT_TRUE(model.ok()) << dir << ": " << model.status().message();
  if (!model.ok()) return out;
  for (const auto& item : (*model)->named_parameters(true)) out.push_back(item.value().detach());
  return out;
}

// Two rank processes with stage 2 end where two ranks with stage 0 end (the launcher, the
// engine's key, the checkpoint through every rank, rank 0's export), and one process refuses to
// resume their sharded checkpoint, naming the two ranks that wrote it.
TEST_F(ZeroConfigIntegrationTest, SftNprocTwoWithStageTwoMatchesStageZeroAndPinsTheWorldSize) {
  const std::string model_dir = models::testing::MakeTempDir("zero_cli_model");
  models::testing::TinyModelOptions mo;
  mo.vocab_size = 259;
  models::testing::WriteTinyModel(model_dir, mo);
  std::ofstream(model_dir + "/tokenizer.json") << models::ByteTokenizer().ToHuggingFaceJson();
  const std::string data = dir_ + "/sft.jsonl";
  {
    std::ofstream out(data);
    for (int i = 0; i < 12; ++i) {
      out << R"({"prompt": "add )" << i << R"(:", "completion": " )" << 2 * i + 1 << "\"}\n";
    }
  }
  const std::string recipe = dir_ + "/full.yaml";
  std::ofstream(recipe) << "run:\n  output_dir: " << runs_ << "\n  seed: 3\n"
                        << "logging:\n  progress_bar: false\n"
                        << "checkpoint:\n  every: 2\n"
                        << "trainer:\n  algorithm: sft\n  total_steps: 4\n"
                        << "model:\n  path: " << model_dir << "\n  dtype: float32\n"
                        << "sft:\n  data: " << data << "\n  format: prompt_completion\n"
                        << "  batch_size: 4\n  threads: 1\n  optim:\n    lr: 1.0e-2\n"
                        << "    max_grad_norm: 0.5\n";
  auto plain = Allot("sft -c " + recipe + " --name z0 --nproc 2");
  ASSERT_EQ(plain.code, 0) << plain.output;
  auto zero = Allot("sft -c " + recipe + " --name z2 --nproc 2 --set trainer.zero_stage=2");
  ASSERT_EQ(zero.code, 0) << zero.output;
  const auto want = ModelWeights(runs_ + "/z0/model");
  const auto got = ModelWeights(runs_ + "/z2/model");
  ASSERT_EQ(got.size(), want.size());
  ASSERT_FALSE(want.empty());
  const auto start = ModelWeights(model_dir);
  double off = 0, moved = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    off = std::max(off, (got[i] - want[i]).abs().max().item<double>());
    moved = std::max(moved, (want[i] - start[i]).abs().max().item<double>());
  }
  EXPECT_GT(moved, 1e-3) << "the runs did not train";
  EXPECT_LT(off, 1e-5) << "stage 2 through the CLI differs from stage 0";
  const std::string step4 = runs_ + "/z2/checkpoints/" + CheckpointStore::StepDirName(4);
  EXPECT_TRUE(fs::exists(step4 + "/optimizer.rank-00000-of-00002.safetensors"));
  EXPECT_TRUE(fs::exists(step4 + "/optimizer.rank-00001-of-00002.safetensors"));

  auto one = Allot("resume z2 --output-dir " + runs_);
  EXPECT_NE(one.code, 0) << one.output;
  EXPECT_TRUE(Has(one, "2 ranks")) << one.output;
}

}  // namespace
}  // namespace allot::trainer
