// GRPO update benchmark (issue 12): tokens/s and peak memory of one GRPO update on CPU for a tiny
// Qwen2 model with LoRA, through the learner's own path (trainer/grpo UpdatePolicy: chunked
// log-probs, the clipped surrogate with truncated IS, backward, gradient clipping, AdamW).
//
//   allot_grpo_bench [--write FILE] [--threads N] [--runs R] [--packing 0|1] [--seed S]
//
// The model, the adapter (lora_B drawn non-zero, so the adapter matters) and a variable-length
// batch are built from --seed. --write stores all of them in one safetensors file, which
// grpo_torch.py reads to run the same update in plain PyTorch. Prints one JSON object: the
// first update's loss, grad norm and entropy (computed on the written weights, for the
// agreement check), then per-update medians of wall and process CPU seconds, tokens/s, and the
// resident-set high-water mark. grpo_bench.sh runs both sides and prints the ratio.
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "models/causal_lm.h"
#include "models/weights_io.h"
#include "trainer/grpo/policy_update.h"

namespace allot::bench {
namespace {

struct Args {
  std::string write;
  int threads = 1;
  int runs = 5;
  int packing = 1;
  uint64_t seed = 7;
  int64_t batch = 16;  // 2 prompts x group of 8
  int64_t group = 8;
  int64_t prompt_min = 32, prompt_max = 96;
  int64_t completion_min = 16, completion_max = 256;
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

models::TransformerConfig TinyQwen2() {
  models::TransformerConfig c;
  c.family = models::ModelFamily::kQwen2;
  c.model_type = "qwen2";
  c.vocab_size = 1536;
  c.hidden_size = 256;
  c.intermediate_size = 704;
  c.num_hidden_layers = 4;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 64;
  c.rms_norm_eps = 1e-6;
  c.rope_theta = 1000000.0;
  c.tie_word_embeddings = true;
  c.attention_bias = true;
  return c;
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
  }
  int64_t t = 0;
  for (const auto& s : seqs) t = std::max<int64_t>(t, static_cast<int64_t>(s.size()));
  trainer::grpo::RolloutBatch b;
  b.input_ids = torch::zeros({a.batch, t}, torch::kLong);
  b.attention_mask = torch::zeros({a.batch, t}, torch::kLong);
  b.loss_mask = torch::zeros({a.batch, t - 1});
  b.advantages = torch::zeros({a.batch, t - 1});
  b.weights = torch::ones({a.batch, t - 1});
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

int Main(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--write") {
      a.write = v;
    } else if (k == "--threads") {
      a.threads = std::stoi(v);
    } else if (k == "--runs") {
      a.runs = std::stoi(v);
    } else if (k == "--packing") {
      a.packing = std::stoi(v);
    } else if (k == "--seed") {
      a.seed = std::stoull(v);
    } else {
      std::fprintf(stderr, "grpo_bench: unknown flag %s\n", k.c_str());
      return 2;
    }
  }
  if (a.runs < 1 || a.threads < 1) {
    std::fprintf(stderr, "grpo_bench: --runs and --threads must be >= 1\n");
    return 2;
  }
  at::set_num_threads(a.threads);
  torch::manual_seed(a.seed);
  const models::TransformerConfig config = TinyQwen2();
  auto model = std::make_shared<models::CausalLMImpl>(config, torch::TensorOptions());
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
  if (Status s = model->AttachLora(spec, {"q_proj", "k_proj", "v_proj", "o_proj"}, a.seed);
      !s.ok()) {
    std::fprintf(stderr, "grpo_bench: %s\n", s.ToString().c_str());
    return 1;
  }
  {
    torch::NoGradGuard no_grad;
    for (auto& site : model->linear_sites()) {
      if (site.linear->has_lora()) site.linear->lora_B.normal_(0.0, 0.02);
    }
  }
  model->set_packing(a.packing != 0);
  std::mt19937_64 rng(a.seed);
  trainer::grpo::RolloutBatch batch = MakeBatch(a, config.vocab_size, rng);
  {
    // The sampler's log-probs: the learner's at these weights plus noise, so the truncated IS
    // weights exp(old - rollout) are not all 1 and some are truncated at the cap.
    torch::NoGradGuard no_grad;
    at::Tensor lp = model->TokenLogProbs(batch.input_ids, batch.attention_mask);
    batch.rollout_logp = (lp + torch::empty_like(lp).uniform_(-0.8, 0.8)) * batch.loss_mask;
  }
  if (!a.write.empty()) {
    models::NamedTensors tensors;
    for (const auto& p : model->named_parameters()) tensors.emplace_back(p.key(), p.value());
    // Ids as float32 (exact below 2^24): the weights writer takes float dtypes only.
    tensors.emplace_back("batch.input_ids", batch.input_ids.to(torch::kFloat));
    tensors.emplace_back("batch.attention_mask", batch.attention_mask.to(torch::kFloat));
    tensors.emplace_back("batch.loss_mask", batch.loss_mask);
    tensors.emplace_back("batch.advantages", batch.advantages);
    tensors.emplace_back("batch.rollout_logp", batch.rollout_logp);
    if (Status s = models::WriteTensors(a.write, tensors); !s.ok()) {
      std::fprintf(stderr, "grpo_bench: %s\n", s.ToString().c_str());
      return 1;
    }
  }

  torch::optim::AdamW optimizer(model->LoraParameters(),
                                torch::optim::AdamWOptions(1e-5).weight_decay(0.01));
  trainer::grpo::UpdateOptions options;  // one update, token-level ratio, clip 0.2, TIS cap 2
  options.lr = 1e-5;
  options.max_grad_norm = 1.0;
  options.chunk_tokens = 512;
  const double rss_base = StatusMiB("VmRSS");
  std::vector<double> wall, cpu;
  trainer::grpo::StepMetrics first;
  for (int r = 0; r <= a.runs; ++r) {  // run 0 is the warm-up and the agreement check
    trainer::grpo::StepMetrics m;
    const auto w0 = std::chrono::steady_clock::now();
    const double c0 = CpuSeconds();
    if (Status s = trainer::grpo::UpdatePolicy(*model, optimizer, batch, options, &m); !s.ok()) {
      std::fprintf(stderr, "grpo_bench: %s\n", s.ToString().c_str());
      return 1;
    }
    const double c1 = CpuSeconds();
    const double w1 = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
    if (r == 0) {
      first = m;
    } else {
      wall.push_back(w1);
      cpu.push_back(c1 - c0);
    }
  }
  const double tokens = static_cast<double>(batch.total_tokens);
  const int64_t padded_slots = batch.input_ids.numel();
  std::printf(
      "{\"side\": \"allot\", \"threads\": %d, \"packing\": %d, \"runs\": %d, \"batch\": %ld, "
      "\"padded_len\": %ld, \"padded_slots\": %ld, \"tokens\": %.0f, \"trainable_tokens\": %ld, "
      "\"loss\": %.9g, \"grad_norm\": %.9g, \"entropy\": %.9g, "
      "\"wall_s\": %.6f, \"cpu_s\": %.6f, \"tokens_per_s\": %.1f, \"tokens_per_cpu_s\": %.1f, "
      "\"rss_base_mib\": %.1f, \"rss_peak_mib\": %.1f}\n",
      a.threads, a.packing, a.runs, static_cast<long>(a.batch),
      static_cast<long>(batch.input_ids.size(1)), static_cast<long>(padded_slots), tokens,
      static_cast<long>(batch.trainable_tokens), first.loss, first.grad_norm, first.entropy,
      Median(wall), Median(cpu), tokens / Median(wall), tokens / Median(cpu), rss_base,
      StatusMiB("VmHWM"));
  return 0;
}

}  // namespace
}  // namespace allot::bench

int main(int argc, char** argv) { return allot::bench::Main(argc, argv); }
