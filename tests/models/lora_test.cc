#include <gtest/gtest.h>
#include <malloc.h>
#include <torch/torch.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/safetensors.h"
#include "models/causal_lm.h"
#include "models/lora.h"
#include "models/peft.h"
#include "tests/models/tiny_model.h"

namespace allot::models {
namespace {

using testing::MakeTempDir;
using testing::WriteTinyModel;

std::shared_ptr<CausalLMImpl> Load(const std::string& dir) {
  auto m = CausalLMImpl::Load(dir);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  (*m)->eval();  // LoRA dropout is active in training mode
  return *m;
}

// Gives every adapter a non-zero B, as training would.
void Randomise(CausalLMImpl& m, uint64_t seed) {
  torch::manual_seed(seed);
  torch::NoGradGuard g;
  for (const auto& site : m.linear_sites()) {
    if (site.linear->has_lora()) site.linear->lora_B.normal_(0.0, 0.2);
  }
}

float MaxDiff(const at::Tensor& a, const at::Tensor& b) {
  return (a - b).abs().max().item<float>();
}

const LoraSpec kSpec{.r = 4, .alpha = 8.0, .dropout = 0.0, .use_rslora = false};
const std::vector<std::string> kAll = {"q", "k", "v", "o", "gate", "up", "down"};

class LoraTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = WriteTinyModel(MakeTempDir("lora_base"));
    model_ = Load(dir_);
    ids_ = torch::tensor({{3, 9, 27, 1, 40, 12, 5}}, torch::kLong);
    torch::NoGradGuard g;
    base_logits_ = model_->forward(ids_);
  }
  at::Tensor Logits() {
    torch::NoGradGuard g;
    return model_->forward(ids_);
  }
  std::string dir_;
  std::shared_ptr<CausalLMImpl> model_;
  at::Tensor ids_;
  at::Tensor base_logits_;
};

TEST_F(LoraTest, FreshAdapterWithZeroBEqualsBase) {
  ASSERT_TRUE(model_->AttachLora(kSpec, kAll).ok());
  EXPECT_TRUE(model_->has_lora());
  EXPECT_EQ(MaxDiff(Logits(), base_logits_), 0.0f);
  EXPECT_GT(model_->linear_sites()[0].linear->lora_A.abs().sum().item<float>(), 0.0f);
}

TEST_F(LoraTest, DisabledAdapterEqualsBaseAndEnabledDiffers) {
  ASSERT_TRUE(model_->AttachLora(kSpec, kAll).ok());
  Randomise(*model_, 1);
  EXPECT_GT(MaxDiff(Logits(), base_logits_), 1e-3f);
  model_->SetLoraEnabled(false);
  EXPECT_EQ(MaxDiff(Logits(), base_logits_), 0.0f);
  model_->SetLoraEnabled(true);
  EXPECT_GT(MaxDiff(Logits(), base_logits_), 1e-3f);
}

TEST_F(LoraTest, OnlyTargetsAdaptedAndOnlyAdapterTrains) {
  ASSERT_TRUE(model_->AttachLora(kSpec, {"q_proj", "v"}).ok());
  for (const auto& site : model_->linear_sites()) {
    EXPECT_EQ(site.linear->has_lora(), site.kind == "q_proj" || site.kind == "v_proj") << site.path;
  }
  EXPECT_EQ(model_->LoraParameters().size(), 8u);  // 2 layers x 2 modules x (A, B)
  Randomise(*model_, 2);
  at::Tensor loss = model_->TokenLogProbs(ids_, {}, 4).sum();
  loss.backward();
  for (const auto& it : model_->named_parameters()) {
    const bool lora = it.key().find(".lora_") != std::string::npos;
    EXPECT_EQ(it.value().requires_grad(), lora) << it.key();
    if (lora) {
      ASSERT_TRUE(it.value().grad().defined()) << it.key();
      EXPECT_GT(it.value().grad().abs().sum().item<float>(), 0.0f) << it.key();
    }
  }
  EXPECT_FALSE(model_->AttachLora(kSpec, {"qq"}).ok());
}

TEST(LoraLinearTest, ScalingIsAlphaOverROrOverSqrtRWithRsLora) {
  torch::manual_seed(0);
  LoraLinear lin(6, 5, /*bias=*/true, torch::TensorOptions());
  at::Tensor x = torch::randn({3, 6});
  for (bool rs : {false, true}) {
    LoraSpec spec{.r = 4, .alpha = 6.0, .dropout = 0.0, .use_rslora = rs};
    EXPECT_DOUBLE_EQ(spec.scaling(), rs ? 3.0 : 1.5);
    lin->AttachLora(spec);
    {
      torch::NoGradGuard g;
      lin->lora_B.normal_();
    }
    at::Tensor want =
        torch::linear(x, lin->weight, lin->bias) +
        spec.scaling() * torch::matmul(torch::matmul(x, lin->lora_A.t()), lin->lora_B.t());
    EXPECT_LT(MaxDiff(lin->forward(x), want), 1e-5f);
    EXPECT_LT(MaxDiff(torch::linear(x, lin->MergedWeight(), lin->bias), want), 1e-5f);
  }
}

TEST(LoraLinearTest, DropoutOnlyInTraining) {
  torch::manual_seed(0);
  LoraLinear lin(16, 16, false, torch::TensorOptions());
  lin->AttachLora({.r = 2, .alpha = 2.0, .dropout = 0.5});
  {
    torch::NoGradGuard g;
    lin->lora_B.normal_();
  }
  at::Tensor x = torch::randn({4, 16});
  lin->eval();
  at::Tensor a = lin->forward(x);
  EXPECT_TRUE(torch::equal(a, lin->forward(x)));
  lin->train();
  EXPECT_GT(MaxDiff(lin->forward(x), a), 1e-4f);
}

// PEFT adds the float32 adapter term to the bfloat16 base output in float32 and rounds the sum
// once; rounding the term to bfloat16 first gives other bits (bench/gpu/parity.py).
TEST(LoraLinearTest, Bfloat16BaseRoundsBaseOutputPlusAdapterOnceAsPeftDoes) {
  torch::manual_seed(0);
  LoraLinear lin(64, 64, true, torch::TensorOptions().dtype(torch::kBFloat16));
  lin->AttachLora({.r = 8, .alpha = 16.0});
  {
    torch::NoGradGuard g;
    lin->lora_B.normal_(0.0, 0.1);
  }
  lin->eval();
  at::Tensor x = torch::randn({32, 64}).to(torch::kBFloat16);
  at::Tensor base = torch::linear(x, lin->weight, lin->bias);
  at::Tensor delta =
      torch::linear(torch::linear(x.to(torch::kFloat), lin->lora_A), lin->lora_B) * 2.0;
  at::Tensor peft = (base + delta).to(torch::kBFloat16);  // promotes to float32, as in PEFT
  EXPECT_TRUE(torch::equal(lin->forward(x), peft));
  EXPECT_FALSE(torch::equal(base + delta.to(torch::kBFloat16), peft));  // the order matters here
}

TEST_F(LoraTest, MergedExportEqualsAdapterAtRunTime) {
  ASSERT_TRUE(model_->AttachLora({.r = 4, .alpha = 16.0, .use_rslora = true}, kAll).ok());
  Randomise(*model_, 3);
  at::Tensor with_adapter = Logits();
  const std::string out = MakeTempDir("lora_merged");
  ASSERT_TRUE(model_->SaveMerged(out).ok());
  auto merged = Load(out);
  EXPECT_FALSE(merged->has_lora());
  torch::NoGradGuard g;
  EXPECT_LT(MaxDiff(merged->forward(ids_), with_adapter), 1e-4f);
  // In place as well.
  model_->MergeLora();
  EXPECT_FALSE(model_->has_lora());
  EXPECT_LT(MaxDiff(Logits(), with_adapter), 1e-4f);
}

TEST_F(LoraTest, PeftSaveLoadRoundTripIsExact) {
  ASSERT_TRUE(model_->AttachLora({.r = 4, .alpha = 8.0, .dropout = 0.1}, {"q", "k", "down"}).ok());
  Randomise(*model_, 4);
  const std::string adapter = MakeTempDir("lora_peft");
  ASSERT_TRUE(SaveAdapter(*model_, adapter, "org/tiny-qwen2").ok());

  // The files are PEFT's.
  std::ifstream in(adapter + "/adapter_config.json");
  auto json = nlohmann::json::parse(in);
  EXPECT_EQ(json["peft_type"], "LORA");
  EXPECT_EQ(json["task_type"], "CAUSAL_LM");
  EXPECT_EQ(json["r"], 4);
  EXPECT_EQ(json["lora_alpha"], 8.0);
  EXPECT_EQ(json["bias"], "none");
  EXPECT_EQ(json["use_rslora"], false);
  EXPECT_EQ(json["base_model_name_or_path"], "org/tiny-qwen2");
  EXPECT_EQ(json["target_modules"], nlohmann::json({"q_proj", "k_proj", "down_proj"}));
  auto file = safetensors::File::Open(adapter + "/adapter_model.safetensors");
  ASSERT_TRUE(file.ok());
  EXPECT_EQ((*file)->tensors().size(), 12u);
  const auto* a = (*file)->Find("base_model.model.model.layers.1.self_attn.k_proj.lora_A.weight");
  const auto* b = (*file)->Find("base_model.model.model.layers.0.mlp.down_proj.lora_B.weight");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(a->shape, (std::vector<int64_t>{4, 32}));  // [r, in]
  EXPECT_EQ(b->shape, (std::vector<int64_t>{32, 4}));  // [out, r]
  EXPECT_EQ(a->dtype, safetensors::Dtype::kF32);

  auto fresh = Load(dir_);
  auto loaded = LoadAdapter(*fresh, adapter);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->spec.dropout, 0.1);
  auto want = model_->named_parameters();
  for (const auto& it : fresh->named_parameters()) {
    ASSERT_TRUE(want.contains(it.key())) << it.key();
    EXPECT_TRUE(torch::equal(it.value(), want[it.key()])) << it.key();
  }
  EXPECT_EQ(fresh->named_parameters().size(), want.size());
  torch::NoGradGuard g;
  EXPECT_TRUE(torch::equal(fresh->forward(ids_), Logits()));
}

TEST_F(LoraTest, LoadAdapterErrorsNameFileAndTensor) {
  ASSERT_TRUE(model_->AttachLora(kSpec, {"q"}).ok());
  const std::string adapter = MakeTempDir("lora_bad");
  ASSERT_TRUE(SaveAdapter(*model_, adapter, "base").ok());
  // The config now claims v_proj too, whose tensors are absent.
  std::ifstream in(adapter + "/adapter_config.json");
  auto json = nlohmann::json::parse(in);
  json["target_modules"] = {"q_proj", "v_proj"};
  std::ofstream(adapter + "/adapter_config.json") << json.dump();
  auto fresh = Load(dir_);
  auto r = LoadAdapter(*fresh, adapter);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("adapter_model.safetensors: missing tensor "
                                      "'base_model.model.model.layers.0.self_attn.v_proj.lora_A"
                                      ".weight'"),
            std::string::npos)
      << r.status().message();
  EXPECT_FALSE(fresh->has_lora());

  auto dora = ParseAdapterConfig(R"({"peft_type": "LORA", "r": 4, "lora_alpha": 8,
                                     "target_modules": ["q_proj"], "use_dora": true})",
                                 "x/adapter_config.json");
  ASSERT_FALSE(dora.ok());
  EXPECT_NE(dora.status().message().find("x/adapter_config.json: field 'use_dora'"),
            std::string::npos);
  auto no_r = ParseAdapterConfig(R"({"peft_type": "LORA", "lora_alpha": 8})", "y.json");
  ASSERT_FALSE(no_r.ok());
  EXPECT_NE(no_r.status().message().find("'r'"), std::string::npos);
  EXPECT_FALSE(LoadAdapter(*fresh, "/nonexistent/adapter").ok());
}

TEST_F(LoraTest, Bfloat16BaseKeepsFloat32Adapter) {
  auto m = CausalLMImpl::Load(dir_, {.dtype = "bfloat16"});
  ASSERT_TRUE(m.ok());
  (*m)->eval();
  torch::NoGradGuard g;
  at::Tensor base = (*m)->forward(ids_);
  ASSERT_TRUE((*m)->AttachLora(kSpec, kAll).ok());
  EXPECT_EQ((*m)->LoraParameters()[0].scalar_type(), torch::kFloat);
  EXPECT_TRUE(torch::equal((*m)->forward(ids_), base));
  Randomise(**m, 6);
  at::Tensor adapted = (*m)->forward(ids_);
  EXPECT_GT(MaxDiff(adapted, base), 1e-2f);
  (*m)->SetLoraEnabled(false);
  EXPECT_TRUE(torch::equal((*m)->forward(ids_), base));
}

TEST_F(LoraTest, ApplyLoraConfigFreshOrFromDirectory) {
  LoraConfig config;
  config.r = 2;
  config.target_modules = {"gate", "up"};
  ASSERT_TRUE(ApplyLoraConfig(*model_, config).ok());
  EXPECT_EQ(model_->LoraParameters().size(), 8u);
  EXPECT_EQ(model_->linear_sites()[4].linear->lora_spec().r, 2);
  Randomise(*model_, 5);
  const std::string adapter = MakeTempDir("lora_init");
  ASSERT_TRUE(SaveAdapter(*model_, adapter, "base").ok());
  auto fresh = Load(dir_);
  auto continued = ApplyLoraConfig(
      *fresh, {.r = 2, .target_modules = {"gate_proj", "up"}, .init_from = adapter});
  ASSERT_TRUE(continued.ok()) << continued.ToString();
  torch::NoGradGuard g;
  EXPECT_TRUE(torch::equal(fresh->forward(ids_), Logits()));
  config.enabled = false;
  auto untouched = Load(dir_);
  ASSERT_TRUE(ApplyLoraConfig(*untouched, config).ok());
  EXPECT_FALSE(untouched->has_lora());
}

// init_from continues the adapter as trained: a recipe whose rank, scale, dropout or modules
// say otherwise would train something else than it reads, so each is an error naming the field.
TEST_F(LoraTest, InitFromRefusesARecipeThatDisagreesWithTheAdapter) {
  LoraConfig config;
  config.r = 4;
  config.lora_alpha = 8.0;
  config.lora_dropout = 0.0;
  config.target_modules = {"q", "v"};
  ASSERT_TRUE(ApplyLoraConfig(*model_, config).ok());
  const std::string adapter = MakeTempDir("lora_init_mismatch");
  ASSERT_TRUE(SaveAdapter(*model_, adapter, "base").ok());
  config.init_from = adapter;
  ASSERT_TRUE(ApplyLoraConfig(*Load(dir_), config).ok());
  struct Case {
    const char* field;
    void (*change)(LoraConfig&);
    const char* says;
  };
  for (const Case& c : std::initializer_list<Case>{
           {"r", [](LoraConfig& l) { l.r = 16; }, "lora.r: 16, but the adapter in"},
           {"lora_alpha", [](LoraConfig& l) { l.lora_alpha = 32.0; }, "has 8;"},
           {"lora_dropout", [](LoraConfig& l) { l.lora_dropout = 0.05; }, "has 0;"},
           {"use_rslora", [](LoraConfig& l) { l.use_rslora = true; }, "true, but"},
           {"target_modules", [](LoraConfig& l) { l.target_modules = {"all-linear"}; },
            "has [q_proj, v_proj]"}}) {
    LoraConfig changed = config;
    c.change(changed);
    Status st = ApplyLoraConfig(*Load(dir_), changed);
    ASSERT_FALSE(st.ok()) << c.field;
    EXPECT_NE(st.message().find(std::string("lora.") + c.field + ": "), std::string::npos)
        << st.ToString();
    EXPECT_NE(st.message().find(c.says), std::string::npos) << st.ToString();
    EXPECT_NE(st.message().find(adapter), std::string::npos) << st.ToString();
  }
}

// A bfloat16 base with a float32 adapter joins them in one node (LoraJoinFn). With a power-of-two
// scaling it gives PEFT's expression, round(float(x W^T) + (x A^T) B^T * s), bit for bit, and
// the same gradients for x, A and B; with another scaling the same to float rounding.
TEST(LoraJoinTest, Bfloat16BaseJoinsTheFloat32AdapterAsPeftDoes) {
  for (const double alpha : {8.0, 6.0}) {
    torch::manual_seed(11);
    LoraLinear lin(24, 40, /*with_bias=*/true, torch::TensorOptions().dtype(torch::kBFloat16));
    lin->AttachLora({.r = 4, .alpha = alpha, .dropout = 0.0, .use_rslora = false}, nullptr);
    {
      torch::NoGradGuard g;
      lin->lora_B.normal_(0.0, 0.3);
    }
    const double s = alpha / 4.0;
    at::Tensor x = torch::randn({2, 5, 24}).to(torch::kBFloat16).requires_grad_();
    at::Tensor x_ref = x.detach().clone().requires_grad_();
    at::Tensor a_ref = lin->lora_A.detach().clone().requires_grad_();
    at::Tensor b_ref = lin->lora_B.detach().clone().requires_grad_();
    at::Tensor out = lin->forward(x);
    at::Tensor base = torch::linear(x_ref, lin->weight.detach(), lin->bias.detach());
    at::Tensor want = (base.to(torch::kFloat) +
                       torch::linear(torch::linear(x_ref.to(torch::kFloat), a_ref), b_ref) * s)
                          .to(torch::kBFloat16);
    ASSERT_EQ(out.scalar_type(), torch::kBFloat16);
    at::Tensor upstream = torch::randn({2, 5, 40}).to(torch::kBFloat16);
    auto got = torch::autograd::grad({out}, {x, lin->lora_A, lin->lora_B}, {upstream});
    auto ref = torch::autograd::grad({want}, {x_ref, a_ref, b_ref}, {upstream});
    if (alpha == 8.0) {
      EXPECT_TRUE(torch::equal(out, want));
      EXPECT_TRUE(torch::equal(got[0], ref[0])) << "x";
      EXPECT_TRUE(torch::equal(got[1], ref[1])) << "A";
      EXPECT_TRUE(torch::equal(got[2], ref[2])) << "B";
    } else {
      // One bfloat16 step of the output at most; the float32 gradients to float rounding.
      EXPECT_LE((out.to(torch::kFloat) - want.to(torch::kFloat)).abs().max().item<float>(),
                want.to(torch::kFloat).abs().max().item<float>() / 128);
      for (size_t k = 0; k < 3; ++k) {
        const float scale = ref[k].to(torch::kFloat).abs().max().item<float>();
        EXPECT_LT((got[k] - ref[k]).to(torch::kFloat).abs().max().item<float>(),
                  1e-5 * scale + (k == 0 ? scale / 128 : 0.0f))
            << k;
      }
    }
  }
}

double ResidentMiB() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  }
  return -1.0;
}

// Between forward and backward a bfloat16 base's adapters keep x itself (shared by q, k and v),
// not a float32 copy each (LoraDownFn). Three adapters on one 8192 x 1024 input would hold
// 3 x 32 MiB of copies; what stays alive here is their small outputs. Fails if the float32 cast
// is what autograd saves again.
TEST(LoraJoinTest, Bfloat16BaseSavesNoFloat32CopyOfTheInput) {
  mallopt(M_MMAP_THRESHOLD, 64 * 1024);  // freed blocks leave the resident set
  torch::manual_seed(3);
  const auto bf16 = torch::TensorOptions().dtype(torch::kBFloat16);
  std::vector<LoraLinear> sites;
  for (int k = 0; k < 3; ++k) {
    sites.emplace_back(1024, 64, /*with_bias=*/false, bf16);
    sites.back()->AttachLora({.r = 8, .alpha = 16.0, .dropout = 0.0}, nullptr);
    sites.back()->train();
  }
  const at::Tensor x = torch::randn({8192, 1024}).to(torch::kBFloat16).requires_grad_();
  const double before = ResidentMiB();
  at::Tensor loss = torch::zeros({}, torch::kFloat);
  for (auto& site : sites) loss = loss + site->forward(x).to(torch::kFloat).sum();
  const double held = ResidentMiB() - before;
  std::printf("held between forward and backward: %.1f MiB\n", held);
  EXPECT_LT(held, 24.0);
  loss.backward();
  EXPECT_TRUE(x.grad().defined() && sites[0]->lora_A.grad().defined());
}

}  // namespace
}  // namespace allot::models
