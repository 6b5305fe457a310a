// trainer.zero_stage through the real `allot` binary: refused, naming the key, where it has no
// effect (the dqn engine, the grpo engine's LoRA learner, sft with LoRA) and out of range;
// accepted for full-parameter sft. Every refusal comes before a run directory exists.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

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

}  // namespace
}  // namespace allot::trainer
