#include "models/sampling.h"

#include <torch/torch.h>

#include <cmath>

namespace allot::models {
namespace {

// Rows `rows` of `t`, without a copy when they are all of it.
at::Tensor Rows(const at::Tensor& t, const std::vector<int64_t>& rows) {
  if (static_cast<int64_t>(rows.size()) == t.size(0)) return t;
  return t.index_select(0, torch::tensor(rows, torch::kLong).to(t.device()));
}

}  // namespace

Sampler::Sampler(const SamplingParams& params, uint64_t stream) : params_(params) {
  if (params.seed.has_value()) {
    std::seed_seq seq{static_cast<uint32_t>(*params.seed),
                      static_cast<uint32_t>(*params.seed >> 32), static_cast<uint32_t>(stream),
                      static_cast<uint32_t>(stream >> 32)};
    rng_.seed(seq);
  } else {
    std::random_device rd;
    rng_.seed((static_cast<uint64_t>(rd()) << 32) ^ rd() ^ stream);
  }
}

SampledToken Sampler::Sample(const at::Tensor& logits_in) {
  at::Tensor logits = logits_in.to(torch::kCPU, torch::kFloat).contiguous();
  if (params_.temperature == 0.0) {
    const int64_t best = logits.argmax().item<int64_t>();
    const float lp = torch::log_softmax(logits, -1)[best].item<float>();
    return {static_cast<int32_t>(best), lp};
  }
  at::Tensor scaled = logits / params_.temperature;
  at::Tensor logp = torch::log_softmax(scaled, -1);
  const int64_t vocab = logits.size(0);

  // Candidates in descending probability; truncate to top-k, then to the smallest prefix whose
  // mass reaches top_p (the token that crosses top_p is kept). Without truncation the vocabulary
  // order is used as is, saving the sort.
  at::Tensor order;
  at::Tensor probs;
  int64_t keep = vocab;
  const bool truncate = (params_.top_k > 0 && params_.top_k < vocab) || params_.top_p < 1.0;
  if (truncate) {
    auto sorted = logp.sort(/*dim=*/-1, /*descending=*/true);
    order = std::get<1>(sorted);
    probs = std::get<0>(sorted).exp();
    if (params_.top_k > 0) keep = std::min(keep, params_.top_k);
    if (params_.top_p < 1.0) {
      at::Tensor before = probs.cumsum(0) - probs;  // mass strictly before each candidate
      const int64_t within = (before.narrow(0, 0, keep) < params_.top_p).sum().item<int64_t>();
      keep = std::max<int64_t>(1, within);
    }
  } else {
    probs = logp.exp();
  }
  const float* p = probs.data_ptr<float>();
  double total = 0.0;
  for (int64_t i = 0; i < keep; ++i) total += p[i];
  const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng_) * total;
  int64_t pick = keep - 1;
  double acc = 0.0;
  for (int64_t i = 0; i < keep; ++i) {
    acc += p[i];
    if (u < acc) {
      pick = i;
      break;
    }
  }
  const int64_t token = truncate ? order[pick].item<int64_t>() : pick;
  return {static_cast<int32_t>(token), logp[token].item<float>()};
}

std::vector<SampledToken> SampleRows(const std::vector<Sampler*>& samplers,
                                     const at::Tensor& logits) {
  TORCH_CHECK(logits.dim() == 2 && logits.size(0) == static_cast<int64_t>(samplers.size()),
              "SampleRows: logits must be [", samplers.size(), ", vocab], got ", logits.sizes());
  std::vector<int64_t> greedy;
  std::vector<int64_t> sampled;
  for (size_t r = 0; r < samplers.size(); ++r) {
    (samplers[r]->greedy() ? greedy : sampled).push_back(static_cast<int64_t>(r));
  }
  std::vector<SampledToken> out(samplers.size());
  if (!greedy.empty()) {
    // Sample()'s greedy branch, for all greedy rows at once.
    at::Tensor g = Rows(logits, greedy).to(torch::kFloat);
    at::Tensor best = g.argmax(-1);
    at::Tensor lp = torch::log_softmax(g, -1).gather(1, best.unsqueeze(1)).squeeze(1);
    best = best.to(torch::kCPU).contiguous();
    lp = lp.to(torch::kCPU).contiguous();
    const int64_t* b = best.data_ptr<int64_t>();
    const float* l = lp.data_ptr<float>();
    for (size_t i = 0; i < greedy.size(); ++i) {
      out[static_cast<size_t>(greedy[i])] = {static_cast<int32_t>(b[i]), l[i]};
    }
  }
  if (!sampled.empty()) {
    const at::Tensor cpu = Rows(logits, sampled).to(torch::kCPU, torch::kFloat).contiguous();
    for (size_t i = 0; i < sampled.size(); ++i) {
      const auto r = static_cast<size_t>(sampled[i]);
      out[r] = samplers[r]->Sample(cpu[static_cast<int64_t>(i)]);
    }
  }
  return out;
}

}  // namespace allot::models
