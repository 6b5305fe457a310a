// The policy checkpoint (trainer/export/policy_checkpoint.h) and `allot export --format
// peft | merged` (trainer/export/policy_export.h) on the tiny causal LM.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/checkpoint_store.h"
#include "models/causal_lm.h"
#include "models/peft.h"
#include "tests/models/tiny_model.h"
#include "trainer/export/policy_checkpoint.h"
#include "trainer/export/policy_export.h"

namespace allot::trainer {
namespace {

namespace fs = std::filesystem;
using models::testing::MakeTempDir;
using models::testing::WriteTinyModel;

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteText(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

class ExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = WriteTinyModel(MakeTempDir("export_base"));
    // Stand-ins for a Hugging Face tokenizer; the export copies them byte for byte.
    WriteText(base_ + "/tokenizer.json", "{\"version\": \"1.0\", \"model\": {\"type\": \"BPE\"}}");
    WriteText(base_ + "/tokenizer_config.json", "{\"eos_token\": \"<|im_end|>\"}");
    WriteText(base_ + "/generation_config.json", "{\"temperature\": 0.7}");
    auto model = models::CausalLMImpl::Load(base_);
    ASSERT_TRUE(model.ok()) << model.status().message();
    trained_ = *model;
    const models::LoraSpec spec{.r = 4, .alpha = 8.0, .dropout = 0.0, .use_rslora = false};
    ASSERT_TRUE(trained_->AttachLora(spec, {"q_proj", "k_proj", "o_proj", "up_proj"}, 3).ok());
    // As training leaves it: B away from zero.
    torch::NoGradGuard g;
    torch::manual_seed(7);
    for (const auto& site : trained_->linear_sites()) {
      if (site.linear->has_lora()) site.linear->lora_B.normal_(0.0, 0.3);
    }
    ids_ = torch::tensor({{3, 9, 27, 1, 40, 12, 5, 63}, {2, 2, 8, 50, 7, 0, 31, 4}}, torch::kLong);
  }

  at::Tensor LogProbs(models::CausalLMImpl& m) {
    torch::NoGradGuard g;
    m.eval();
    return m.TokenLogProbs(ids_);
  }

  std::string SaveCheckpoint() {
    const std::string ckpt = MakeTempDir("export_ckpt");
    EXPECT_TRUE(SavePolicyCheckpoint(*trained_, ckpt, base_).ok());
    return ckpt;
  }

  std::string base_;
  std::shared_ptr<models::CausalLMImpl> trained_;
  at::Tensor ids_;
};

TEST_F(ExportTest, CheckpointRecordsAdapterAndBase) {
  const std::string ckpt = SaveCheckpoint();
  auto info = ReadPolicyCheckpoint(ckpt);
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_EQ(info->format, PolicyFormat::kAdapter);
  EXPECT_EQ(fs::path(info->base_model), fs::absolute(base_).lexically_normal());
  EXPECT_TRUE(fs::exists(ckpt + "/policy/adapter_model.safetensors"));
  EXPECT_FALSE(fs::exists(ckpt + "/policy/model.safetensors")) << "adapter runs store no base";
  auto loaded = LoadPolicyCheckpoint(ckpt);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_TRUE(torch::equal(LogProbs(**loaded), LogProbs(*trained_)));
}

TEST_F(ExportTest, PeftExportLoadsBackEqualToTheTrainedPolicy) {
  const std::string ckpt = SaveCheckpoint();
  const std::string out = MakeTempDir("export_peft") + "/adapter";
  auto written = ExportPolicy(ckpt, {.format = "peft", .out = out});
  ASSERT_TRUE(written.ok()) << written.status().message();
  auto config = nlohmann::json::parse(Slurp(out + "/adapter_config.json"));
  EXPECT_EQ(config["peft_type"], "LORA");
  EXPECT_EQ(config["r"], 4);
  EXPECT_EQ(config["base_model_name_or_path"], fs::absolute(base_).lexically_normal().string());

  auto fresh = models::CausalLMImpl::Load(base_);
  ASSERT_TRUE(fresh.ok());
  ASSERT_TRUE(models::LoadAdapter(**fresh, out).ok());
  const auto want = trained_->LoraParameters();
  const auto got = (*fresh)->LoraParameters();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(torch::equal(got[i], want[i])) << i;
  EXPECT_TRUE(torch::equal(LogProbs(**fresh), LogProbs(*trained_)));
}

TEST_F(ExportTest, MergedExportIsAPlainCausalLMWithTheSameLogProbs) {
  const std::string ckpt = SaveCheckpoint();
  const std::string out = MakeTempDir("export_merged") + "/hf";
  auto written = ExportPolicy(ckpt, {.format = "merged", .out = out});
  ASSERT_TRUE(written.ok()) << written.status().message();
  auto merged = models::CausalLMImpl::Load(out);
  ASSERT_TRUE(merged.ok()) << merged.status().message();
  EXPECT_FALSE((*merged)->has_lora());
  const at::Tensor want = LogProbs(*trained_);
  const at::Tensor got = LogProbs(**merged);
  EXPECT_LT((got - want).abs().max().item<double>(), 1e-4);
  // And the adapter mattered: the base model gives other log-probs.
  auto base = models::CausalLMImpl::Load(base_);
  ASSERT_TRUE(base.ok());
  EXPECT_GT((LogProbs(**base) - want).abs().max().item<double>(), 1e-3);
  // The base's config.json (architectures included) and tokenizer files travel along.
  auto config = nlohmann::json::parse(Slurp(out + "/config.json"));
  EXPECT_EQ(config["torch_dtype"], "float32");
  EXPECT_TRUE(config.contains("architectures"));
  for (const char* name : {"tokenizer.json", "tokenizer_config.json", "generation_config.json"}) {
    EXPECT_EQ(Slurp(out + "/" + name), Slurp(base_ + "/" + name)) << name;
  }
}

TEST_F(ExportTest, MergedExportInHalfPrecision) {
  const std::string ckpt = SaveCheckpoint();
  const std::string out = MakeTempDir("export_merged16") + "/hf";
  ASSERT_TRUE(ExportPolicy(ckpt, {.format = "merged", .out = out, .dtype = "bfloat16"}).ok());
  auto config = nlohmann::json::parse(Slurp(out + "/config.json"));
  EXPECT_EQ(config["torch_dtype"], "bfloat16");
  auto merged = models::CausalLMImpl::Load(out);
  ASSERT_TRUE(merged.ok()) << merged.status().message();
  EXPECT_EQ((*merged)->dtype(), torch::kBFloat16);
}

TEST_F(ExportTest, FullWeightsExportMergedButNotPeft) {
  trained_->MergeLora();  // a run that trained every weight
  const std::string ckpt = SaveCheckpoint();
  auto info = ReadPolicyCheckpoint(ckpt);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->format, PolicyFormat::kFull);
  auto peft = ExportPolicy(ckpt, {.format = "peft", .out = MakeTempDir("export_full_peft")});
  ASSERT_FALSE(peft.ok());
  EXPECT_NE(peft.status().message().find("--format merged"), std::string::npos);
  const std::string out = MakeTempDir("export_full_merged");
  ASSERT_TRUE(ExportPolicy(ckpt, {.format = "merged", .out = out}).ok());
  auto merged = models::CausalLMImpl::Load(out);
  ASSERT_TRUE(merged.ok()) << merged.status().message();
  EXPECT_LT((LogProbs(**merged) - LogProbs(*trained_)).abs().max().item<double>(), 1e-5);
  EXPECT_TRUE(fs::exists(out + "/tokenizer.json"));
}

TEST_F(ExportTest, ResolvesTheNewestCheckpointOfARun) {
  const std::string run = MakeTempDir("export_run");
  CheckpointStore store(run + "/checkpoints", 0);
  for (int64_t step : {2, 5}) {
    auto saved = store.Save(step, [&](const std::string& staging) {
      return SavePolicyCheckpoint(*trained_, staging, base_);
    });
    ASSERT_TRUE(saved.ok()) << saved.status().message();
  }
  auto ckpt = ResolvePolicyCheckpoint(run);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().message();
  EXPECT_EQ(fs::path(*ckpt).filename(), CheckpointStore::StepDirName(5));
  // A step directory and its policy/ directory resolve to themselves.
  EXPECT_EQ(*ResolvePolicyCheckpoint(*ckpt), *ckpt);
  EXPECT_EQ(fs::path(*ResolvePolicyCheckpoint(*ckpt + "/policy")), fs::path(*ckpt));
}

TEST_F(ExportTest, ReadsACheckpointWithAPeftAdapterDirectory) {
  // The GRPO engine's layout: step-N/adapter/ in PEFT format, the base named inside.
  const std::string ckpt = MakeTempDir("export_grpo_ckpt");
  ASSERT_TRUE(models::SaveAdapter(*trained_, ckpt + "/adapter", base_).ok());
  ASSERT_TRUE(HasPolicyCheckpoint(ckpt));
  EXPECT_EQ(*ResolvePolicyCheckpoint(ckpt), ckpt);
  const std::string out = MakeTempDir("export_grpo_merged");
  ASSERT_TRUE(ExportPolicy(ckpt, {.format = "merged", .out = out}).ok());
  auto merged = models::CausalLMImpl::Load(out);
  ASSERT_TRUE(merged.ok()) << merged.status().message();
  EXPECT_LT((LogProbs(**merged) - LogProbs(*trained_)).abs().max().item<double>(), 1e-4);
}

// Alternating GRPO's checkpoints hold one adapter per role (adapters/<role>/): the checkpoint
// names them, and each exports as a policy of its own.
TEST_F(ExportTest, ACheckpointOfRoleAdaptersNamesThemAndEachExports) {
  const std::string ckpt = MakeTempDir("export_roles_ckpt");
  ASSERT_TRUE(models::SaveAdapter(*trained_, ckpt + "/adapters/decomposer", base_).ok());
  ASSERT_TRUE(models::SaveAdapter(*trained_, ckpt + "/adapters/allocator", base_).ok());
  auto info = ReadPolicyCheckpoint(ckpt);
  ASSERT_FALSE(info.ok());
  EXPECT_NE(info.status().message().find("adapters/allocator"), std::string::npos)
      << info.status().message();
  EXPECT_NE(info.status().message().find("adapters/decomposer"), std::string::npos);
  const std::string out = MakeTempDir("export_roles_merged");
  ASSERT_TRUE(ExportPolicy(ckpt + "/adapters/allocator", {.format = "merged", .out = out}).ok());
  auto merged = models::CausalLMImpl::Load(out);
  ASSERT_TRUE(merged.ok()) << merged.status().message();
  EXPECT_LT((LogProbs(**merged) - LogProbs(*trained_)).abs().max().item<double>(), 1e-4);
}

TEST_F(ExportTest, ErrorsNameWhatIsMissing) {
  const std::string empty = MakeTempDir("export_empty");
  auto none = ResolvePolicyCheckpoint(empty);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find(empty), std::string::npos);
  auto info = ReadPolicyCheckpoint(empty);
  ASSERT_FALSE(info.ok());
  EXPECT_NE(info.status().message().find("policy.json"), std::string::npos);
  const std::string ckpt = SaveCheckpoint();
  WriteText(ckpt + "/policy/policy.json",
            "{\"format\": \"lora\", \"base_model\": \"x\", "
            "\"dtype\": \"float32\"}");
  auto bad = ReadPolicyCheckpoint(ckpt);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'format'"), std::string::npos);
  auto bad_format = ExportPolicy(SaveCheckpoint(), {.format = "onnx", .out = empty});
  EXPECT_FALSE(bad_format.ok());
}

}  // namespace
}  // namespace allot::trainer
