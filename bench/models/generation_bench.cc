// Batched decoding throughput of the Generator on CPU, and the memory bound of chunked
// log-probs.
//
//   allot_generation_bench [--threads N]
//
// Part 1: a tiny randomly initialised Qwen2-shaped model (byte vocabulary, hidden 256, 4 layers)
// decodes 64 tokens per sequence at batch sizes 1, 8 and 32; the comparison in the same run is
// the same number of sequences decoded one request at a time. Sampler cost, one decode step and
// prefill are printed first, to show where time goes.
//
// LibTorch's CPU matmuls go through the system BLAS: with Debian's reference libblas3 batching
// buys almost nothing; with libopenblas0-pthread installed it does. Part 2: peak RSS growth of
// CausalLM::TokenLogProbs (chunked) against full [T, vocab] log_softmax, for a 32k vocabulary.
#include <sys/resource.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "models/causal_lm.h"
#include "models/cpu_threads.h"
#include "models/generation.h"

namespace {

using allot::models::CausalLMImpl;
using allot::models::GenerationRequest;
using allot::models::Generator;
using allot::models::TransformerConfig;

double Seconds(const std::chrono::steady_clock::time_point& start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

long PeakRssKb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

TransformerConfig TinyConfig(int64_t vocab) {
  TransformerConfig c;
  c.vocab_size = vocab;
  c.hidden_size = 256;
  c.intermediate_size = 704;
  c.num_hidden_layers = 4;
  c.num_attention_heads = 8;
  c.num_key_value_heads = 4;
  c.head_dim = 32;
  c.attention_bias = true;
  c.max_position_embeddings = 4096;
  return c;
}

std::vector<GenerationRequest> Requests(int n, int64_t max_tokens) {
  std::vector<GenerationRequest> out;
  for (int i = 0; i < n; ++i) {
    GenerationRequest r;
    for (int t = 0; t < 24 + (i % 7); ++t) r.prompt.push_back((i * 31 + t * 7) % 256);
    r.params.temperature = 1.0;
    r.params.seed = static_cast<uint64_t>(i);
    r.params.max_tokens = max_tokens;
    r.params.ignore_eos = true;
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 1;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--threads") == 0) threads = std::atoi(argv[i + 1]);
  }
  allot::models::SetCpuThreads(threads);
  torch::manual_seed(0);
  const int64_t kMaxTokens = 64;
  auto model = std::make_shared<CausalLMImpl>(TinyConfig(259), torch::TensorOptions());
  Generator gen(model.get(), nullptr, {});
  gen.Generate(Requests(2, 8));  // warm-up

  {
    allot::models::SamplingParams sp;
    sp.seed = 1;
    allot::models::Sampler sampler(sp, 0);
    at::Tensor row = torch::randn({259});
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 1000; ++i) sampler.Sample(row);
    std::printf("sampler: %.1f us per token\n", Seconds(start) * 1e3);
    torch::NoGradGuard ng;
    for (int b : {1, 32}) {
      allot::models::KVCache cache(4);
      at::Tensor ids = torch::randint(0, 259, {b, 30}, torch::kLong);
      model->Hidden(ids, {}, {}, &cache);
      at::Tensor step = torch::randint(0, 259, {b, 1}, torch::kLong);
      at::Tensor mask = torch::ones({b, 30}, torch::kLong);
      start = std::chrono::steady_clock::now();
      for (int i = 0; i < 50; ++i) {
        mask = torch::cat({mask, torch::ones({b, 1}, torch::kLong)}, 1);
        model->Logits(model->Hidden(step, mask, {}, &cache));
      }
      std::printf("forward step batch %d: %.2f ms\n", b, Seconds(start) * 1e3 / 50);
      start = std::chrono::steady_clock::now();
      if (!gen.Generate(Requests(b, 1)).ok()) return 1;
      std::printf("prefill + 1 token, batch %d: %.2f ms\n", b, Seconds(start) * 1e3);
    }
  }
  std::printf("decode throughput, %d thread(s), 64 new tokens per sequence\n", threads);
  std::printf("%6s %14s %16s %8s\n", "batch", "batched tok/s", "one-by-one tok/s", "ratio");
  for (int batch : {1, 8, 32}) {
    auto requests = Requests(batch, kMaxTokens);
    auto start = std::chrono::steady_clock::now();
    auto out = gen.Generate(requests);
    const double batched = Seconds(start);
    if (!out.ok()) {
      std::fprintf(stderr, "%s\n", out.status().ToString().c_str());
      return 1;
    }
    start = std::chrono::steady_clock::now();
    for (const auto& r : requests) {
      if (!gen.Generate({r}).ok()) return 1;
    }
    const double sequential = Seconds(start);
    const double tokens = static_cast<double>(batch * kMaxTokens);
    std::printf("%6d %14.0f %16.0f %7.2fx\n", batch, tokens / batched, tokens / sequential,
                sequential / batched);
  }

  // Chunked log-probs first (peak RSS only grows), then full logits.
  const int64_t kVocab = 32000, kTokens = 2048;
  TransformerConfig big = TinyConfig(kVocab);
  big.num_hidden_layers = 1;
  big.hidden_size = 64;
  big.intermediate_size = 128;
  big.num_attention_heads = 2;
  big.num_key_value_heads = 2;
  auto wide = std::make_shared<CausalLMImpl>(big, torch::TensorOptions());
  torch::NoGradGuard no_grad;
  at::Tensor ids = torch::randint(0, kVocab, {1, kTokens}, torch::kLong);
  const long base = PeakRssKb();
  at::Tensor chunked = wide->TokenLogProbs(ids, {}, 256);
  const long after_chunked = PeakRssKb();
  at::Tensor full = torch::log_softmax(wide->forward(ids), -1)
                        .narrow(1, 0, kTokens - 1)
                        .gather(2, ids.narrow(1, 1, kTokens - 1).unsqueeze(2))
                        .squeeze(2);
  const long after_full = PeakRssKb();
  std::printf("\nlog-probs of %lld tokens, vocab %lld: max |chunked - full| = %.2e\n",
              static_cast<long long>(kTokens), static_cast<long long>(kVocab),
              (chunked - full).abs().max().item<double>());
  std::printf("peak RSS growth: chunked (256 rows) %ld MiB, full logits %ld MiB\n",
              (after_chunked - base) / 1024, (after_full - after_chunked) / 1024);
  return 0;
}
