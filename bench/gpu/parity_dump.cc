// Parity cases for the reference implementations: what allot computes, written
// where bench/gpu/parity.py can hold it against transformers, PEFT and onnxruntime.
//
//   allot_parity_dump --family qwen2|qwen3|llama --out DIR [--device cpu|cuda] [--seed S]
//   allot_parity_dump --navigator DIR [--seed S]
//
// The first form builds a small random model of the family (GQA; Qwen2 tied with q/k/v biases,
// Qwen3 tied without biases but with q/k norms, Llama untied without), initialised like
// transformers (N(0, 0.02) matrices) but with random biases and RMSNorm weights so that both are
// exercised, and writes it with allot's own writer (SaveMerged) as a Hugging Face directory:
// DIR/config.json + DIR/model.safetensors. It reloads the directory on --device in float32 and in
// bfloat16 and computes token log-probs of a random unpadded batch, then trains a LoRA adapter on
// every projection (AdamW, next-token cross-entropy), exports it with allot's PEFT writer to
// DIR/adapter, reloads base + adapter in both dtypes and computes the log-probs again.
// DIR/allot_logprobs.safetensors holds the ids (float32, exact below 2^24: the writer takes float
// dtypes only) and the four log-prob tensors [B, T-1]; one JSON line on stdout summarises the case.
//
// The second form trains a navigator for a few DQN updates, writes its weights to
// DIR/navigator.safetensors, exports them to DIR/navigator.onnx (`allot export --format onnx`,
// which needs the libonnx build) and writes DIR/reference.json: states and the Q-values of
// LibTorch's DuelingQNet and of the plain C++ NavigatorMlp.
#include <torch/torch.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "core/atomic_file.h"
#include "models/causal_lm.h"
#include "models/peft.h"
#include "models/weights_io.h"
#include "trainer/dqn/dqn_learner.h"
#include "trainer/dqn/navigator_export.h"

namespace allot::bench {
namespace {

struct Args {
  std::string family;
  std::string out;
  std::string navigator;
  std::string device = "cpu";
  uint64_t seed = 1;
};

// Shapes of a small random model: 8 query heads sharing 2 key/value heads (GQA).
models::TransformerConfig ParityConfig(const std::string& family) {
  models::TransformerConfig c;
  c.vocab_size = 2000;
  c.hidden_size = 256;
  c.intermediate_size = 704;
  c.num_hidden_layers = 4;
  c.num_attention_heads = 8;
  c.num_key_value_heads = 2;
  c.head_dim = 32;
  c.bos_token_id = 1;
  c.eos_token_ids = {2};
  if (family == "llama") {
    c.family = models::ModelFamily::kLlama;
    c.model_type = "llama";
    c.rms_norm_eps = 1e-5;
    c.rope_theta = 500000.0;
    c.max_position_embeddings = 8192;
    c.tie_word_embeddings = false;
    c.attention_bias = false;
  } else {  // qwen2, qwen3: the same but for Qwen2's q/k/v biases and Qwen3's q/k norms
    const bool qwen3 = family == "qwen3";
    c.family = qwen3 ? models::ModelFamily::kQwen3 : models::ModelFamily::kQwen2;
    c.model_type = family;
    c.rms_norm_eps = 1e-6;
    c.rope_theta = 1000000.0;
    c.max_position_embeddings = qwen3 ? 40960 : 32768;
    c.tie_word_embeddings = true;
    c.attention_bias = !qwen3;
  }
  return c;
}

// transformers' _init_weights draws matrices from N(0, initializer_range = 0.02) and leaves
// biases at 0 and norms at 1; non-trivial biases and norm weights are drawn here instead, so a
// bias or norm that one side ignored or misplaced would show.
void InitLikeTransformers(models::CausalLMImpl& model) {
  torch::NoGradGuard no_grad;
  for (auto& p : model.named_parameters()) {
    at::Tensor w = p.value();
    if (w.dim() == 2) {
      w.normal_(0.0, 0.02);
    } else if (p.key().ends_with(".bias")) {
      w.normal_(0.0, 0.2);
    } else {
      w.uniform_(0.5, 1.5);  // RMSNorm weights (Qwen3's q_norm and k_norm too)
    }
  }
}

Status Check(bool ok, const std::string& what) { return ok ? Status::Ok() : Internal(what); }

// Token log-probs [B, T-1] of `ids` without padding, on the CPU.
at::Tensor LogProbs(models::CausalLMImpl& model, const at::Tensor& ids) {
  torch::NoGradGuard no_grad;
  return model.TokenLogProbs(ids.to(model.device())).to(torch::kCPU);
}

double MaxAbsDiff(const at::Tensor& a, const at::Tensor& b) {
  return (a - b).abs().max().item<double>();
}

Result<std::shared_ptr<models::CausalLMImpl>> LoadBase(const std::string& dir,
                                                       const std::string& dtype,
                                                       const std::string& device) {
  models::LoadOptions options;
  options.dtype = dtype;
  options.device = device;
  options.packing = false;  // unpadded batches: packing would not apply anyway
  return models::CausalLMImpl::Load(dir, options);
}

// Next-token cross-entropy on random sequences, `steps` AdamW steps on the adapter only. The
// learning rate is high so that lora_B moves well away from its zero start in a few steps.
void TrainLora(models::CausalLMImpl& model, int64_t vocab, int steps) {
  // Drawn on the CPU, so that the data does not depend on the device's generator.
  const at::Tensor data =
      torch::randint(3, vocab, {8, 64}, torch::TensorOptions().dtype(torch::kLong))
          .to(model.device());
  torch::optim::AdamW optimizer(model.LoraParameters(),
                                torch::optim::AdamWOptions(2e-3).weight_decay(0.0));
  for (int s = 0; s < steps; ++s) {
    optimizer.zero_grad();
    at::Tensor loss = -model.TokenLogProbs(data).mean();
    loss.backward();
    optimizer.step();
  }
}

Status DumpLanguageModel(const Args& a) {
  namespace fs = std::filesystem;
  const models::TransformerConfig config = ParityConfig(a.family);
  torch::manual_seed(a.seed);
  // Built and initialised on the CPU in float32, so every device writes the same checkpoint.
  auto built = std::make_shared<models::CausalLMImpl>(config, torch::TensorOptions());
  InitLikeTransformers(*built);
  ALLOT_RETURN_IF_ERROR(built->SaveMerged(a.out, "float32"));
  const at::Tensor ids =
      torch::randint(3, config.vocab_size, {4, 96}, torch::TensorOptions().dtype(torch::kLong));
  const at::Tensor built_logp = LogProbs(*built, ids);

  // The written directory, read back: the base log-probs of each dtype.
  ALLOT_ASSIGN_OR_RETURN(auto base32, LoadBase(a.out, "float32", a.device));
  ALLOT_ASSIGN_OR_RETURN(auto base16, LoadBase(a.out, "bfloat16", a.device));
  const at::Tensor base_fp32 = LogProbs(*base32, ids);
  const at::Tensor base_bf16 = LogProbs(*base16, ids);

  models::LoraSpec spec;
  spec.r = 16;
  spec.alpha = 32.0;
  spec.dropout = 0.0;
  ALLOT_RETURN_IF_ERROR(base32->AttachLora(
      spec, {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}, a.seed));
  const int kSteps = 20;
  TrainLora(*base32, config.vocab_size, kSteps);
  const std::string adapter_dir = a.out + "/adapter";
  ALLOT_RETURN_IF_ERROR(models::SaveAdapter(*base32, adapter_dir, fs::absolute(a.out).string()));
  const at::Tensor trained_logp = LogProbs(*base32, ids);
  double lora_b_abs_max = 0;
  for (const auto& site : base32->linear_sites()) {
    lora_b_abs_max = std::max(lora_b_abs_max, site.linear->lora_B.abs().max().item<double>());
  }

  // Base + exported adapter, read back: what PEFT is compared with.
  ALLOT_ASSIGN_OR_RETURN(auto lora32, LoadBase(a.out, "float32", a.device));
  ALLOT_ASSIGN_OR_RETURN(auto lora16, LoadBase(a.out, "bfloat16", a.device));
  ALLOT_RETURN_IF_ERROR(models::LoadAdapter(*lora32, adapter_dir).status());
  ALLOT_RETURN_IF_ERROR(models::LoadAdapter(*lora16, adapter_dir).status());
  const at::Tensor lora_fp32 = LogProbs(*lora32, ids);
  const at::Tensor lora_bf16 = LogProbs(*lora16, ids);

  ALLOT_RETURN_IF_ERROR(models::WriteTensors(a.out + "/allot_logprobs.safetensors",
                                             {{"input_ids", ids.to(torch::kFloat)},
                                              {"base.float32", base_fp32},
                                              {"base.bfloat16", base_bf16},
                                              {"lora.float32", lora_fp32},
                                              {"lora.bfloat16", lora_bf16}},
                                             {{"format", "pt"}}));
  // Round trips that must be exact on the CPU (same kernels, same weights); on CUDA the first
  // is the CPU-vs-device difference. The adapter moved the log-probs by lora_effect.
  nlohmann::json j = {
      {"case", "lm"},
      {"family", a.family},
      {"device", a.device},
      {"seed", a.seed},
      {"dir", a.out},
      {"batch", ids.size(0)},
      {"seq_len", ids.size(1)},
      {"lora_steps", kSteps},
      {"lora_B_abs_max", lora_b_abs_max},
      {"built_cpu_vs_loaded_fp32", MaxAbsDiff(built_logp, base_fp32)},
      {"trained_vs_reloaded_adapter_fp32", MaxAbsDiff(trained_logp, lora_fp32)},
      {"allot_bf16_vs_fp32_base", MaxAbsDiff(base_bf16, base_fp32)},
      {"allot_bf16_vs_fp32_lora", MaxAbsDiff(lora_bf16, lora_fp32)},
      {"lora_effect_fp32", MaxAbsDiff(lora_fp32, base_fp32)},
  };
  std::printf("%s\n", j.dump().c_str());
  std::fflush(stdout);
  return Check(lora_b_abs_max > 1e-3, "the adapter did not train: lora_B is still about zero");
}

// RLoT's state features are small integers (counts and flags in 0..3).
std::vector<float> NavigatorStates(int n, int dim, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> v(0, 3);
  std::vector<float> s(static_cast<size_t>(n) * dim);
  for (auto& x : s) x = static_cast<float>(v(rng));
  return s;
}

Status DumpNavigator(const Args& a) {
  trainer::DqnConfig config;
  trainer::DqnLearner learner(config, a.seed);
  // A few Double-DQN updates on a fixed batch so that the weights are no longer the init.
  const int b = 16;
  trainer::SampledBatch batch;
  batch.states = NavigatorStates(b, config.state_dim, a.seed + 1);
  batch.next_states = NavigatorStates(b, config.state_dim, a.seed + 2);
  for (int i = 0; i < b; ++i) {
    batch.actions.push_back(i % config.num_actions);
    batch.rewards.push_back(static_cast<float>(i % 2));
  }
  batch.dones.assign(b, 0.0f);
  batch.discounts.assign(b, 0.9f);
  batch.weights.assign(b, 1.0f);
  for (int i = 0; i < 20; ++i) learner.Update(batch);

  std::error_code ec;
  std::filesystem::create_directories(a.navigator, ec);
  if (ec) return InvalidArgument(a.navigator + ": cannot create directory (" + ec.message() + ")");
  // The weights as a run stores them, then `allot export --format onnx` of that file.
  const std::string weights_path = a.navigator + "/navigator.safetensors";
  ALLOT_ASSIGN_OR_RETURN(std::string weights, learner.OnlineWeights());
  ALLOT_RETURN_IF_ERROR(WriteFileAtomic(weights_path, weights));
  ALLOT_RETURN_IF_ERROR(trainer::ExportNavigator(weights_path, "onnx", a.navigator).status());

  const int n = 128;
  const std::vector<float> states = NavigatorStates(n, config.state_dim, a.seed + 3);
  const std::vector<float> q_torch = learner.OnlineQ(states);
  std::vector<float> q_mlp(static_cast<size_t>(n) * config.num_actions);
  for (int i = 0; i < n; ++i) {
    learner.actor().Forward(
        std::span<const float>(states.data() + static_cast<size_t>(i) * config.state_dim,
                               config.state_dim),
        std::span<float>(q_mlp.data() + static_cast<size_t>(i) * config.num_actions,
                         config.num_actions));
  }
  nlohmann::json ref = {
      {"n", n},           {"state_dim", config.state_dim}, {"num_actions", config.num_actions},
      {"states", states}, {"q_libtorch", q_torch},         {"q_navigator_mlp", q_mlp}};
  ALLOT_RETURN_IF_ERROR(WriteFileAtomic(a.navigator + "/reference.json", ref.dump() + "\n"));
  std::printf("%s\n", nlohmann::json({{"case", "navigator"},
                                      {"dir", a.navigator},
                                      {"onnx", a.navigator + "/navigator.onnx"},
                                      {"rows", n}})
                          .dump()
                          .c_str());
  return Status::Ok();
}

int Main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; i += 2) {
    const std::string k = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "parity_dump: %s needs a value\n", k.c_str());
      return 2;
    }
    const std::string v = argv[i + 1];
    if (k == "--family") {
      a.family = v;
    } else if (k == "--out") {
      a.out = v;
    } else if (k == "--navigator") {
      a.navigator = v;
    } else if (k == "--device") {
      a.device = v;
    } else if (k == "--seed") {
      a.seed = std::stoull(v);
    } else {
      std::fprintf(stderr, "parity_dump: unknown flag %s\n", k.c_str());
      return 2;
    }
  }
  Status s;
  if (!a.navigator.empty()) {
    s = DumpNavigator(a);
  } else if ((a.family == "qwen2" || a.family == "qwen3" || a.family == "llama") &&
             !a.out.empty()) {
    s = DumpLanguageModel(a);
  } else {
    std::fprintf(stderr,
                 "usage: allot_parity_dump --family qwen2|qwen3|llama --out DIR "
                 "[--device cpu|cuda] "
                 "[--seed S]\n       allot_parity_dump --navigator DIR [--seed S]\n");
    return 2;
  }
  if (!s.ok()) {
    std::fprintf(stderr, "parity_dump: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace allot::bench

int main(int argc, char** argv) { return allot::bench::Main(argc, argv); }
