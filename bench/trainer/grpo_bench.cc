// GRPO update benchmark (on a GPU against transformers + PEFT, bench/gpu/; figures in
// docs/benchmarks.md): tokens/s, MFU and peak memory of one
// GRPO update of a Qwen2 model with LoRA, through the learner's own path (trainer/grpo
// UpdatePolicy: chunked log-probs, the clipped surrogate with truncated IS, backward, gradient
// clipping, AdamW).
//
//   allot_grpo_bench [--write FILE | --write-batch FILE] [--threads N] [--runs R]
//                    [--packing 0|1] [--seed S] [--device cpu|cuda] [--dtype float32|bfloat16]
//                    [--model tiny|qwen2-0.5b|qwen2-1.5b|qwen3-0.6b|qwen3-4b]
//                    [--lora-targets all-linear|q,k,v,o]
//                    [--batch B] [--group G] [--prompt-len P] [--completion-min C0]
//                    [--completion-max C1] [--grad-checkpointing 0|1]
//                    [--checkpoint-layers N] [--chunk-tokens N]
//                    [--peak-tflops F] [--profile TRACE.json]
//
// The model (random weights, N(0, 0.02) as transformers initialises them), the adapter (lora_B
// drawn non-zero, so the adapter matters) and a variable-length batch are built from --seed.
// --write stores the weights, the adapter and the batch in one safetensors file (grpo_torch.py
// and bench/gpu/grpo_hf.py read it for the agreement check); --write-batch stores only the batch
// and the model's shape (metadata), so that grpo_hf.py times the identical token layout on its
// own random weights without a multi-GB file. Qwen3 (q_norm/k_norm, no q/k/v bias) is there for
// the Qwen3-4B case, the model of prime-rl's published figure.
//
// Prints one JSON object: the first update's loss, grad norm and entropy (the warm-up, on the
// written weights), then per-update medians of wall (and on CPU process CPU) seconds, real
// (non-pad) tokens/s, model FLOPs utilisation and peak memory (CPU: the resident-set high-water
// mark; CUDA: the caching allocator's peak of allocated bytes from just before the warm-up).
//
// --profile: one more update after the timed ones, under LibTorch's Kineto profiler (CPU
// operators, and GPU kernels on CUDA), written as a Chrome trace (bench/gpu/trace_summary.py).
//
// MFU = model FLOPs of the update / median wall seconds / --peak-tflops (default: H100 SXM dense
// BF16, 989.4). Model FLOPs are summed per sequence of L real tokens, with N the weights of the
// matmuls a token goes through (q/k/v/o, gate/up/down and the output matrix; embedding lookup,
// norms and biases left out), A = n_layers * n_heads * head_dim:
//   mfu       (PaLM App. B, torchtitan):  6 N L + 12 A L^2
//   mfu_lora  (prime-rl's LoRA count):    4 N L + 6 N_lora L + 12 A L^2
// 6N is forward 2N plus backward 4N (input and weight gradients); a frozen base needs no weight
// gradients, hence 4N, plus 6 per adapter parameter. The attention term counts QK^T and AV in
// forward and backward over the full L x L square (no causal discount), the convention of both.
// mfu_lora is how prime-rl's published LoRA figure (Qwen3-4B, 16k tokens, 21.7% on one H100) is
// counted. Both sides of the GPU comparison count the same FLOPs for the same batch.
#include <ATen/Parallel.h>
#include <torch/cuda.h>
#include <torch/torch.h>
#include <torch/version.h>

#ifdef ALLOT_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench/trainer/kineto_trace.h"
#include "models/causal_lm.h"
#include "models/weights_io.h"
#include "trainer/grpo/policy_update.h"

namespace allot::bench {
namespace {

struct Args {
  std::string write;
  std::string write_batch;
  std::string profile;
  int threads = 1;
  int runs = 5;
  int packing = 1;
  uint64_t seed = 7;
  std::string device = "cpu";
  std::string dtype = "float32";
  std::string model = "tiny";
  std::string lora_targets = "q_proj,k_proj,v_proj,o_proj";
  int64_t batch = 16;  // 2 prompts x group of 8
  int64_t group = 8;
  int64_t prompt_min = 32, prompt_max = 96;
  int64_t completion_min = 16, completion_max = 256;
  int grad_checkpointing = 0;
  int64_t checkpoint_layers = -1;  // with --grad-checkpointing 1: the first N layers (-1 all)
  int64_t chunk_tokens = 512;
  double peak_tflops = 989.4;
};

// Resident set and its high-water mark in MiB, from /proc/self/status.
double StatusMiB(const std::string& key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) return std::atof(line.c_str() + key.size() + 1) / 1024.0;
  }
  return -1.0;
}

double CpuSeconds() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The caching allocator's peak of allocated bytes (tensors, not the cache it holds) since the
// last reset; -1 where it cannot be read (CPU, or a build without ALLOT_WITH_CUDA).
#ifdef ALLOT_WITH_CUDA
// "cuda" names no index: the allocator's statistics are per device, so ask for the current one.
c10::DeviceIndex IndexOf(const torch::Device& d) {
  return d.has_index() ? d.index() : c10::cuda::current_device();
}
#endif

void ResetGpuPeak([[maybe_unused]] const torch::Device& d) {
#ifdef ALLOT_WITH_CUDA
  if (!d.is_cuda()) return;
#if TORCH_VERSION_MAJOR >= 2
  c10::cuda::CUDACachingAllocator::get()->resetPeakStats(IndexOf(d));
#else
  c10::cuda::CUDACachingAllocator::resetPeakStats(IndexOf(d));
#endif
#endif
}

int64_t GpuPeakBytes([[maybe_unused]] const torch::Device& d) {
#ifdef ALLOT_WITH_CUDA
  if (d.is_cuda()) {
    // Index 0 of each stat array is the aggregate over the small and large pools.
#if TORCH_VERSION_MAJOR >= 2
    return c10::cuda::CUDACachingAllocator::get()
        ->getDeviceStats(IndexOf(d))
        .allocated_bytes[0]
        .peak;
#else
    return c10::cuda::CUDACachingAllocator::getDeviceStats(IndexOf(d)).allocated_bytes[0].peak;
#endif
  }
#endif
  return -1;
}

models::TransformerConfig QwenShape(int64_t hidden, int64_t layers, int64_t heads, int64_t kv_heads,
                                    int64_t head_dim, int64_t intermediate, int64_t vocab,
                                    bool qwen3 = false) {
  models::TransformerConfig c;
  c.family = qwen3 ? models::ModelFamily::kQwen3 : models::ModelFamily::kQwen2;
  c.model_type = qwen3 ? "qwen3" : "qwen2";
  c.vocab_size = vocab;
  c.hidden_size = hidden;
  c.intermediate_size = intermediate;
  c.num_hidden_layers = layers;
  c.num_attention_heads = heads;
  c.num_key_value_heads = kv_heads;
  c.head_dim = head_dim;
  c.rms_norm_eps = 1e-6;
  c.rope_theta = 1000000.0;
  c.tie_word_embeddings = true;
  c.attention_bias = !qwen3;
  return c;
}

// The shapes of Qwen/Qwen2-0.5B, Qwen/Qwen2-1.5B, Qwen/Qwen3-0.6B and Qwen/Qwen3-4B (their
// config.json), and the tiny model of the CPU benchmark.
Result<models::TransformerConfig> BenchModel(const std::string& name) {
  if (name == "tiny") return QwenShape(256, 4, 4, 2, 64, 704, 1536);
  if (name == "qwen2-0.5b") return QwenShape(896, 24, 14, 2, 64, 4864, 151936);
  if (name == "qwen2-1.5b") return QwenShape(1536, 28, 12, 2, 128, 8960, 151936);
  if (name == "qwen3-0.6b") return QwenShape(1024, 28, 16, 8, 128, 3072, 151936, true);
  if (name == "qwen3-4b") return QwenShape(2560, 36, 32, 8, 128, 9728, 151936, true);
  return InvalidArgument("--model: '" + name +
                         "' is not one of tiny, qwen2-0.5b, qwen2-1.5b, qwen3-0.6b, qwen3-4b");
}

// Groups of `group` completions per prompt; left-padded like BuildRolloutBatch's output.
trainer::grpo::RolloutBatch MakeBatch(const Args& a, int64_t vocab, std::mt19937_64& rng) {
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  std::vector<std::vector<int64_t>> seqs(a.batch);
  std::vector<int64_t> prompt_len(a.batch);
  std::vector<double> reward(a.batch);
  for (int64_t g = 0; g < a.batch; g += a.group) {
    const int64_t p = pick(a.prompt_min, a.prompt_max);
    std::vector<int64_t> prompt(p);
    for (auto& t : prompt) t = pick(1, vocab - 1);
    for (int64_t i = g; i < std::min(a.batch, g + a.group); ++i) {
      seqs[i] = prompt;
      prompt_len[i] = p;
      const int64_t c = pick(a.completion_min, a.completion_max);
      for (int64_t k = 0; k < c; ++k) seqs[i].push_back(pick(1, vocab - 1));
      reward[i] = static_cast<double>(pick(0, 1));
    }
    // A group whose rewards all agree has zero advantages and so a zero gradient (a group of
    // two does half the time): flip one reward so that every group has something to learn.
    const int64_t end = std::min(a.batch, g + a.group);
    if (end - g > 1 && std::all_of(reward.begin() + g, reward.begin() + end,
                                   [&](double r) { return r == reward[g]; })) {
      reward[g] = 1.0 - reward[g];
    }
  }
  int64_t t = 0;
  for (const auto& s : seqs) t = std::max<int64_t>(t, static_cast<int64_t>(s.size()));
  trainer::grpo::RolloutBatch b;
  b.input_ids = torch::zeros({a.batch, t}, torch::kLong);
  b.attention_mask = torch::zeros({a.batch, t}, torch::kLong);
  b.loss_mask = torch::zeros({a.batch, t - 1});
  b.advantages = torch::zeros({a.batch, t - 1});
  for (int64_t i = 0; i < a.batch; ++i) {
    // Group-relative advantage (CogER Eq. 10): (r - mean) / std over the group.
    const int64_t g0 = i / a.group * a.group, g1 = std::min(a.batch, g0 + a.group);
    double mean = 0, var = 0;
    for (int64_t j = g0; j < g1; ++j) mean += reward[j] / (g1 - g0);
    for (int64_t j = g0; j < g1; ++j) var += (reward[j] - mean) * (reward[j] - mean) / (g1 - g0);
    const double adv = (reward[i] - mean) / (std::sqrt(var) + 1e-4);
    const int64_t n = static_cast<int64_t>(seqs[i].size()), off = t - n;
    for (int64_t k = 0; k < n; ++k) {
      b.input_ids[i][off + k] = seqs[i][k];
      b.attention_mask[i][off + k] = 1;
    }
    // Target column j scores token j + 1: completion tokens are k >= prompt_len.
    for (int64_t k = prompt_len[i]; k < n; ++k) {
      b.loss_mask[i][off + k - 1] = 1.0;
      b.advantages[i][off + k - 1] = adv;
    }
  }
  b.advantages *= b.loss_mask;
  b.trainable_tokens = b.loss_mask.sum().item<int64_t>();
  b.total_tokens = b.attention_mask.sum().item<int64_t>();
  return b;
}

constexpr char kFlopsConvention[] =
    "per sequence of L tokens: 6NL + 12AL^2; lora: 4NL + 6 N_lora L + 12AL^2";

struct ModelFlops {
  double standard = 0.0;  // 6 N L + 12 A L^2 per sequence
  double lora = 0.0;      // 4 N L + 6 N_lora L + 12 A L^2 per sequence
  double matmul_params = 0.0;
  double lora_params = 0.0;
};

// The MFU numerators of one update (the file comment states the convention).
ModelFlops CountModelFlops(const models::CausalLMImpl& model, const at::Tensor& attention_mask) {
  ModelFlops f;
  for (const auto& site : model.linear_sites()) {
    f.matmul_params += static_cast<double>(site.linear->weight.numel());
  }
  f.matmul_params += static_cast<double>(model.output_weight().numel());
  for (const auto& p : model.LoraParameters()) f.lora_params += static_cast<double>(p.numel());
  const auto& c = model.config();
  const double attn =
      12.0 * static_cast<double>(c.num_hidden_layers * c.num_attention_heads * c.head_dim);
  const at::Tensor lengths = attention_mask.sum(1).to(torch::kCPU, torch::kDouble).contiguous();
  const double* len = lengths.data_ptr<double>();
  for (int64_t i = 0; i < lengths.numel(); ++i) {
    const double l = len[i];
    f.standard += 6.0 * f.matmul_params * l + attn * l * l;
    f.lora += (4.0 * f.matmul_params + 6.0 * f.lora_params) * l + attn * l * l;
  }
  return f;
}

// The model's shape and the run's settings, stored with --write / --write-batch so that the
// reader rebuilds the same model (strings: safetensors metadata is string to string).
std::map<std::string, std::string> Metadata(const Args& a, const models::TransformerConfig& c,
                                            const std::vector<std::string>& targets) {
  std::string joined;
  for (const auto& t : targets) joined += (joined.empty() ? "" : ",") + t;
  std::ostringstream theta, eps;
  theta << c.rope_theta;
  eps << c.rms_norm_eps;
  return {{"model", a.model},
          {"model_type", c.model_type},
          {"vocab_size", std::to_string(c.vocab_size)},
          {"hidden_size", std::to_string(c.hidden_size)},
          {"intermediate_size", std::to_string(c.intermediate_size)},
          {"num_hidden_layers", std::to_string(c.num_hidden_layers)},
          {"num_attention_heads", std::to_string(c.num_attention_heads)},
          {"num_key_value_heads", std::to_string(c.num_key_value_heads)},
          {"head_dim", std::to_string(c.head_dim)},
          {"rope_theta", theta.str()},
          {"rms_norm_eps", eps.str()},
          {"tie_word_embeddings", c.tie_word_embeddings ? "1" : "0"},
          {"lora_r", "16"},
          {"lora_alpha", "32"},
          {"lora_targets", joined},
          {"grad_checkpointing", std::to_string(a.grad_checkpointing)},
          {"dtype", a.dtype},
          {"seed", std::to_string(a.seed)}};
}

std::vector<std::string> SplitComma(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// Flags as "--name value" pairs; errors name the flag.
Result<Args> ParseArgs(int argc, char** argv) {
  Args a;
  std::map<std::string, std::function<void(const std::string&)>> set = {
      {"--write", [&](const std::string& v) { a.write = v; }},
      {"--write-batch", [&](const std::string& v) { a.write_batch = v; }},
      {"--threads", [&](const std::string& v) { a.threads = std::stoi(v); }},
      {"--runs", [&](const std::string& v) { a.runs = std::stoi(v); }},
      {"--packing", [&](const std::string& v) { a.packing = std::stoi(v); }},
      {"--seed", [&](const std::string& v) { a.seed = std::stoull(v); }},
      {"--device", [&](const std::string& v) { a.device = v; }},
      {"--dtype", [&](const std::string& v) { a.dtype = v; }},
      {"--model", [&](const std::string& v) { a.model = v; }},
      {"--lora-targets", [&](const std::string& v) { a.lora_targets = v; }},
      {"--batch", [&](const std::string& v) { a.batch = std::stoll(v); }},
      {"--group", [&](const std::string& v) { a.group = std::stoll(v); }},
      {"--prompt-len", [&](const std::string& v) { a.prompt_min = a.prompt_max = std::stoll(v); }},
      {"--completion-min", [&](const std::string& v) { a.completion_min = std::stoll(v); }},
      {"--completion-max", [&](const std::string& v) { a.completion_max = std::stoll(v); }},
      {"--grad-checkpointing", [&](const std::string& v) { a.grad_checkpointing = std::stoi(v); }},
      {"--checkpoint-layers", [&](const std::string& v) { a.checkpoint_layers = std::stoll(v); }},
      {"--chunk-tokens", [&](const std::string& v) { a.chunk_tokens = std::stoll(v); }},
      {"--peak-tflops", [&](const std::string& v) { a.peak_tflops = std::stod(v); }},
      {"--profile", [&](const std::string& v) { a.profile = v; }},
  };
  for (int i = 1; i < argc; i += 2) {
    const std::string k = argv[i];
    auto it = set.find(k);
    if (it == set.end()) return InvalidArgument("unknown flag " + k);
    if (i + 1 >= argc) return InvalidArgument(k + " needs a value");
    try {
      it->second(argv[i + 1]);
    } catch (const std::exception&) {
      return InvalidArgument(k + ": '" + argv[i + 1] + "' is not a number");
    }
  }
  if (a.runs < 1 || a.threads < 1) return InvalidArgument("--runs and --threads must be >= 1");
  if (a.batch < 1 || a.group < 1) return InvalidArgument("--batch and --group must be >= 1");
  if (a.prompt_min < 1 || a.completion_min < 1 || a.completion_max < a.completion_min) {
    return InvalidArgument(
        "--prompt-len and --completion-min must be >= 1, --completion-max >= --completion-min");
  }
  if (a.dtype != "float32" && a.dtype != "bfloat16") {
    return InvalidArgument("--dtype: '" + a.dtype + "' is not one of float32, bfloat16");
  }
  if (a.device != "cpu" && a.device.rfind("cuda", 0) != 0) {
    return InvalidArgument("--device: '" + a.device + "' is not one of cpu, cuda, cuda:N");
  }
  if (!a.write.empty() && !a.write_batch.empty()) {
    return InvalidArgument("--write and --write-batch exclude each other");
  }
  if (a.chunk_tokens < 1 || a.peak_tflops <= 0) {
    return InvalidArgument("--chunk-tokens and --peak-tflops must be positive");
  }
  return a;
}

Status Run(const Args& a) {
  at::set_num_threads(a.threads);
  torch::manual_seed(a.seed);
  const torch::Device device(a.device);
  if (device.is_cuda() && !torch::cuda::is_available()) {
    return Unavailable("--device " + a.device + ": CUDA is not available to LibTorch " +
                       TORCH_VERSION);
  }
  const at::ScalarType dtype = a.dtype == "bfloat16" ? torch::kBFloat16 : torch::kFloat;
  ALLOT_ASSIGN_OR_RETURN(const models::TransformerConfig config, BenchModel(a.model));
  ALLOT_ASSIGN_OR_RETURN(const std::vector<std::string> targets,
                         models::ResolveTargetModules(SplitComma(a.lora_targets)));
  auto model = std::make_shared<models::CausalLMImpl>(
      config, torch::TensorOptions().dtype(dtype).device(device));
  {
    // Random init as transformers does: N(0, 0.02) matrices, zero biases, unit norms.
    torch::NoGradGuard no_grad;
    for (auto& p : model->named_parameters()) {
      if (p.value().dim() == 2) p.value().normal_(0.0, 0.02);
      if (p.key().ends_with(".bias")) p.value().zero_();
    }
  }
  models::LoraSpec spec;
  spec.r = 16;
  spec.alpha = 32.0;
  spec.dropout = 0.0;  // dropout masks could not be matched across the two implementations
  ALLOT_RETURN_IF_ERROR(model->AttachLora(spec, targets, a.seed));
  {
    torch::NoGradGuard no_grad;
    for (auto& site : model->linear_sites()) {
      if (site.linear->has_lora()) site.linear->lora_B.normal_(0.0, 0.02);
    }
  }
  model->set_packing(a.packing != 0);
  ALLOT_RETURN_IF_ERROR(
      model->SetGradientCheckpointing(a.grad_checkpointing != 0, a.checkpoint_layers));
  std::mt19937_64 rng(a.seed);
  trainer::grpo::RolloutBatch batch = MakeBatch(a, config.vocab_size, rng);
  {
    // The sampler's log-probs: the learner's at these weights plus noise, so the truncated IS
    // weights exp(old - rollout) are not all 1 and some are truncated at the cap. The batch
    // stays in host memory, where the learner receives it (UpdatePolicy moves what the loss
    // needs to the model's device).
    torch::NoGradGuard no_grad;
    at::Tensor lp = model->TokenLogProbs(batch.input_ids, batch.attention_mask, a.chunk_tokens);
    lp = (lp + torch::empty_like(lp).uniform_(-0.8, 0.8)).to(torch::kCPU);
    batch.rollout_logp = lp * batch.loss_mask;
  }
  if (!a.write.empty() || !a.write_batch.empty()) {
    // Float32 on the CPU for the readers; ids as float32 are exact below 2^24.
    auto f32 = [](const at::Tensor& t) { return t.detach().to(torch::kCPU, torch::kFloat); };
    models::NamedTensors tensors;
    if (!a.write.empty()) {
      for (const auto& p : model->named_parameters()) tensors.emplace_back(p.key(), f32(p.value()));
    }
    tensors.emplace_back("batch.input_ids", f32(batch.input_ids));
    tensors.emplace_back("batch.attention_mask", f32(batch.attention_mask));
    tensors.emplace_back("batch.loss_mask", f32(batch.loss_mask));
    tensors.emplace_back("batch.advantages", f32(batch.advantages));
    tensors.emplace_back("batch.rollout_logp", f32(batch.rollout_logp));
    ALLOT_RETURN_IF_ERROR(models::WriteTensors(a.write.empty() ? a.write_batch : a.write, tensors,
                                               Metadata(a, config, targets)));
  }

  torch::optim::AdamW optimizer(model->LoraParameters(),
                                torch::optim::AdamWOptions(1e-5).weight_decay(0.01));
  trainer::grpo::UpdateOptions options;  // one update, token-level ratio, clip 0.2, TIS cap 2
  options.lr = 1e-5;
  options.max_grad_norm = 1.0;
  options.chunk_tokens = a.chunk_tokens;
  // Clocks are read only once the device has finished the queued kernels.
  auto sync = [&] {
    if (device.is_cuda()) torch::cuda::synchronize();
  };
  sync();
  const double rss_base = StatusMiB("VmRSS");
  ResetGpuPeak(device);
  std::vector<double> wall, cpu;
  trainer::grpo::StepMetrics first;
  for (int r = 0; r <= a.runs; ++r) {  // run 0 is the warm-up and the agreement check
    trainer::grpo::StepMetrics m;
    sync();
    const auto w0 = std::chrono::steady_clock::now();
    const double c0 = CpuSeconds();
    ALLOT_RETURN_IF_ERROR(trainer::grpo::UpdatePolicy(*model, optimizer, batch, options, &m));
    sync();
    const double c1 = CpuSeconds();
    const double w1 = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
    if (r == 0) {
      first = m;
    } else {
      wall.push_back(w1);
      cpu.push_back(c1 - c0);
    }
  }
  if (!a.profile.empty()) {
    trainer::grpo::StepMetrics m;
    ALLOT_RETURN_IF_ERROR(WriteKinetoTrace(a.profile, device.is_cuda(), [&] {
      return trainer::grpo::UpdatePolicy(*model, optimizer, batch, options, &m);
    }));
  }
  const double tokens = static_cast<double>(batch.total_tokens);
  const int64_t padded_slots = batch.input_ids.numel();
  const ModelFlops flops = CountModelFlops(*model, batch.attention_mask);
  const double peak = a.peak_tflops * 1e12;
  const double gpu_peak = static_cast<double>(GpuPeakBytes(device));
  std::string walls;
  for (double w : wall) walls += (walls.empty() ? "" : ", ") + std::to_string(w);
  std::printf(
      "{\"side\": \"allot\", \"torch_version\": \"%s\", \"model\": \"%s\", \"device\": \"%s\", "
      "\"dtype\": \"%s\", \"lora_targets\": \"%s\", \"grad_checkpointing\": %d, "
      "\"checkpoint_layers\": %ld, "
      "\"threads\": %d, \"packing\": %d, \"runs\": %d, \"batch\": %ld, "
      "\"padded_len\": %ld, \"padded_slots\": %ld, \"tokens\": %.0f, \"trainable_tokens\": %ld, "
      "\"loss\": %.9g, \"grad_norm\": %.9g, \"entropy\": %.9g, "
      "\"wall_s\": %.6f, \"wall_s_runs\": [%s], \"cpu_s\": %.6f, \"tokens_per_s\": %.1f, "
      "\"tokens_per_cpu_s\": %.1f, \"matmul_params\": %.0f, \"lora_params\": %.0f, "
      "\"flops_convention\": \"%s\", \"model_flops\": %.6g, \"model_flops_lora\": %.6g, "
      "\"peak_tflops\": %.1f, "
      "\"mfu\": %.6g, \"mfu_lora\": %.6g, \"gpu_peak_bytes\": %.0f, \"gpu_peak_gib\": %.3f, "
      "\"rss_base_mib\": %.1f, \"rss_peak_mib\": %.1f}\n",
      TORCH_VERSION, a.model.c_str(), a.device.c_str(), a.dtype.c_str(), a.lora_targets.c_str(),
      a.grad_checkpointing, static_cast<long>(model->checkpoint_layers()), a.threads, a.packing,
      a.runs, static_cast<long>(a.batch), static_cast<long>(batch.input_ids.size(1)),
      static_cast<long>(padded_slots), tokens, static_cast<long>(batch.trainable_tokens),
      first.loss, first.grad_norm, first.entropy, Median(wall), walls.c_str(), Median(cpu),
      tokens / Median(wall), tokens / Median(cpu), flops.matmul_params, flops.lora_params,
      kFlopsConvention, flops.standard, flops.lora, a.peak_tflops,
      flops.standard / Median(wall) / peak, flops.lora / Median(wall) / peak, gpu_peak,
      gpu_peak / (1024.0 * 1024.0 * 1024.0), rss_base, StatusMiB("VmHWM"));
  return Status::Ok();
}

// Failures (a bad flag, CUDA out of memory) print one JSON line with "error" too, so that
// grpo_bench_gpu.sh can put them in its table and go on with the next case.
int Fail(const std::string& message, int code) {
  std::string first_line = message.substr(0, message.find('\n'));
  std::string escaped;
  for (char ch : first_line) {
    if (ch == '"' || ch == '\\') escaped += '\\';
    escaped += ch;
  }
  std::fprintf(stderr, "grpo_bench: %s\n", message.c_str());
  std::printf("{\"side\": \"allot\", \"error\": \"%s\"}\n", escaped.c_str());
  return code;
}

int Main(int argc, char** argv) {
  Result<Args> args = ParseArgs(argc, argv);
  if (!args.ok()) return Fail(args.status().ToString(), 2);
  try {
    if (Status s = Run(*args); !s.ok()) return Fail(s.ToString(), 1);
  } catch (const std::exception& e) {
    return Fail(e.what(), 1);
  }
  return 0;
}

}  // namespace
}  // namespace allot::bench

int main(int argc, char** argv) { return allot::bench::Main(argc, argv); }
