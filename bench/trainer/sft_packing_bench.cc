// SFT packing vs length bucketing: forward + backward tokens per CPU second of the
// completion-only loss on a tiny Qwen2 (full fine-tuning), for the same examples collated
// three ways: shuffled micro-batches padded, length-bucketed micro-batches padded (allot's
// sft.packing: false), and micro-batches packed (sft.packing: true; bucketed or shuffled).
//
//   allot_sft_packing_bench [--runs R] [--examples N] [--batch B]
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "models/causal_lm.h"
#include "trainer/sft/packing.h"
#include "trainer/sft/sft_loss.h"

namespace allot::bench {
namespace {

using Example = std::vector<int64_t>;

trainer::SftMicroBatch Collate(const std::vector<Example>& ex, const std::vector<size_t>& idx,
                               const std::vector<int64_t>& prompt_len) {
  int64_t t = 0;
  for (size_t i : idx) t = std::max<int64_t>(t, static_cast<int64_t>(ex[i].size()));
  const int64_t b = static_cast<int64_t>(idx.size());
  trainer::SftMicroBatch mb;
  mb.input_ids = torch::zeros({b, t}, torch::kLong);
  mb.attention_mask = torch::zeros({b, t}, torch::kLong);
  mb.loss_mask = torch::zeros({b, t}, torch::kBool);
  for (int64_t r = 0; r < b; ++r) {
    const Example& e = ex[idx[r]];
    const int64_t n = static_cast<int64_t>(e.size()), off = t - n;
    for (int64_t k = 0; k < n; ++k) {
      mb.input_ids[r][off + k] = e[k];
      mb.attention_mask[r][off + k] = 1;
      if (k >= prompt_len[idx[r]]) mb.loss_mask[r][off + k] = true;
    }
  }
  mb.tokens = mb.attention_mask.sum().item<int64_t>();
  mb.loss_tokens = mb.loss_mask.sum().item<int64_t>();
  return mb;
}

int Main(int argc, char** argv) {
  int runs = 3;
  int64_t n_examples = 64, batch = 8;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--runs")
      runs = std::stoi(v);
    else if (k == "--examples")
      n_examples = std::stoll(v);
    else if (k == "--batch")
      batch = std::stoll(v);
    else {
      std::fprintf(stderr, "sft_packing_bench: unknown flag %s\n", k.c_str());
      return 2;
    }
  }
  at::set_num_threads(1);
  torch::manual_seed(1);
  models::TransformerConfig c;
  c.vocab_size = 1536;
  c.hidden_size = 256;
  c.intermediate_size = 704;
  c.num_hidden_layers = 4;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 64;
  c.tie_word_embeddings = true;
  c.attention_bias = true;
  auto model = std::make_shared<models::CausalLMImpl>(c, torch::TensorOptions());
  std::mt19937_64 rng(3);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  std::vector<Example> ex(n_examples);
  std::vector<int64_t> prompt_len(n_examples);
  int64_t tokens = 0;
  for (int64_t i = 0; i < n_examples; ++i) {
    prompt_len[i] = pick(16, 64);
    const int64_t n = prompt_len[i] + pick(16, 448);
    for (int64_t k = 0; k < n; ++k) ex[i].push_back(pick(1, c.vocab_size - 1));
    tokens += n;
  }
  std::vector<size_t> shuffled(n_examples);
  for (size_t i = 0; i < shuffled.size(); ++i) shuffled[i] = i;
  std::shuffle(shuffled.begin(), shuffled.end(), rng);
  std::vector<size_t> bucketed = shuffled;  // one window: all examples sorted by length
  std::stable_sort(bucketed.begin(), bucketed.end(),
                   [&](size_t a, size_t b) { return ex[a].size() < ex[b].size(); });
  auto micro = [&](const std::vector<size_t>& order) {
    std::vector<trainer::SftMicroBatch> out;
    for (size_t s = 0; s < order.size(); s += batch) {
      std::vector<size_t> idx(order.begin() + s, order.begin() + std::min(order.size(), s + batch));
      out.push_back(Collate(ex, idx, prompt_len));
    }
    return out;
  };
  const auto shuffled_mb = micro(shuffled), bucketed_mb = micro(bucketed);
  auto measure = [&](const std::vector<trainer::SftMicroBatch>& mbs, bool packed) {
    std::vector<double> cpu;
    for (int r = 0; r <= runs; ++r) {
      const double c0 = static_cast<double>(std::clock()) / CLOCKS_PER_SEC;
      for (const auto& mb : mbs) {
        model->zero_grad();
        (packed ? trainer::PackedCompletionLossSum(*model, mb, 512)
                : trainer::CompletionLossSum(*model, mb, 512))
            .backward();
      }
      const double c1 = static_cast<double>(std::clock()) / CLOCKS_PER_SEC;
      if (r > 0) cpu.push_back(c1 - c0);
    }
    std::sort(cpu.begin(), cpu.end());
    return static_cast<double>(tokens) / cpu[cpu.size() / 2];
  };
  int64_t slots_s = 0, slots_b = 0;
  for (const auto& mb : shuffled_mb) slots_s += mb.input_ids.numel();
  for (const auto& mb : bucketed_mb) slots_b += mb.input_ids.numel();
  std::printf(
      "%ld examples, %ld tokens, micro-batches of %ld; padded slots: shuffled %ld, "
      "bucketed %ld; 1 thread, median of %d epochs, tokens per CPU second\n",
      static_cast<long>(n_examples), static_cast<long>(tokens), static_cast<long>(batch),
      static_cast<long>(slots_s), static_cast<long>(slots_b), runs);
  std::printf("  padded, shuffled   %8.0f\n", measure(shuffled_mb, false));
  std::printf("  padded, bucketed   %8.0f\n", measure(bucketed_mb, false));
  std::printf("  packed, shuffled   %8.0f\n", measure(shuffled_mb, true));
  std::printf("  packed, bucketed   %8.0f\n", measure(bucketed_mb, true));
  return 0;
}

}  // namespace
}  // namespace allot::bench

int main(int argc, char** argv) { return allot::bench::Main(argc, argv); }
