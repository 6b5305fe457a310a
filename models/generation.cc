#include "models/generation.h"

#include <torch/torch.h>

#include <algorithm>

namespace allot::models {
namespace {

struct Live {
  size_t request = 0;
  size_t sample = 0;
  const SamplingParams* params = nullptr;
  Sampler sampler;
  GeneratedSequence out;
  std::string text;                    // decoded so far (only when the request has stop strings)
  size_t stop_at = std::string::npos;  // byte offset of the matched stop string in `text`

  Live(size_t r, size_t s, const SamplingParams* p)
      : request(r), sample(s), params(p), sampler(*p, s) {}
};

bool Contains(const std::vector<int32_t>& ids, int32_t id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

}  // namespace

Generator::Generator(CausalLMImpl* model, const Tokenizer* tokenizer,
                     std::vector<int32_t> eos_token_ids)
    : model_(model), tokenizer_(tokenizer), eos_(std::move(eos_token_ids)) {}

Generator::Generator(CausalLMImpl* model, const Tokenizer* tokenizer)
    : model_(model), tokenizer_(tokenizer) {
  for (int64_t id : model->config().eos_token_ids) eos_.push_back(static_cast<int32_t>(id));
}

Result<std::vector<GenerationResult>> Generator::Generate(
    const std::vector<GenerationRequest>& requests) {
  const auto& config = model_->config();
  for (size_t i = 0; i < requests.size(); ++i) {
    const auto& r = requests[i];
    const std::string where = "request " + std::to_string(i) + ": ";
    if (Status s = r.params.Validate(); !s.ok()) return s.Annotate("request " + std::to_string(i));
    if (r.prompt.empty()) return InvalidArgument(where + "empty prompt");
    for (int32_t id : r.prompt) {
      if (id < 0 || id >= config.vocab_size) {
        return InvalidArgument(where + "prompt token id " + std::to_string(id) +
                               " is outside the vocabulary [0, " +
                               std::to_string(config.vocab_size) + ")");
      }
    }
    const int64_t total = static_cast<int64_t>(r.prompt.size()) + r.params.max_tokens;
    if (total > config.max_position_embeddings) {
      return InvalidArgument(where + "prompt (" + std::to_string(r.prompt.size()) +
                             " tokens) + max_tokens (" + std::to_string(r.params.max_tokens) +
                             ") exceeds the model's max_position_embeddings (" +
                             std::to_string(config.max_position_embeddings) + ")");
    }
    if (!r.params.stop.empty() && tokenizer_ == nullptr) {
      return InvalidArgument(where + "stop strings need a tokenizer");
    }
  }
  std::vector<GenerationResult> results(requests.size());
  if (requests.empty()) return results;

  std::vector<Live> seqs;
  for (size_t i = 0; i < requests.size(); ++i) {
    for (int64_t s = 0; s < requests[i].params.n; ++s) {
      seqs.emplace_back(i, static_cast<size_t>(s), &requests[i].params);
    }
  }
  const int64_t n = static_cast<int64_t>(seqs.size());
  size_t width = 0;
  for (const auto& s : seqs) width = std::max(width, requests[s.request].prompt.size());

  torch::NoGradGuard no_grad;
  const bool was_training = model_->is_training();
  model_->eval();
  const at::Device dev = model_->device();
  auto long_cpu = torch::TensorOptions().dtype(torch::kLong);
  at::Tensor ids = torch::zeros({n, static_cast<int64_t>(width)}, long_cpu);
  at::Tensor mask = torch::zeros({n, static_cast<int64_t>(width)}, long_cpu);
  for (int64_t b = 0; b < n; ++b) {
    const auto& prompt = requests[seqs[b].request].prompt;
    const int64_t len = static_cast<int64_t>(prompt.size());
    std::vector<int64_t> wide(prompt.begin(), prompt.end());
    ids[b].narrow(0, width - len, len).copy_(torch::tensor(wide, long_cpu));
    mask[b].narrow(0, width - len, len).fill_(1);
  }
  ids = ids.to(dev);
  mask = mask.to(dev);

  KVCache cache(config.num_hidden_layers);
  at::Tensor hidden = model_->Hidden(ids, mask, {}, &cache);
  at::Tensor logits = model_->Logits(hidden.select(1, static_cast<int64_t>(width) - 1));

  std::vector<size_t> active(seqs.size());
  for (size_t i = 0; i < active.size(); ++i) active[i] = i;
  Status failure;
  while (!active.empty()) {
    std::vector<int64_t> keep_rows;
    std::vector<int64_t> next;
    std::vector<size_t> still;
    for (size_t row = 0; row < active.size(); ++row) {
      Live& s = seqs[active[row]];
      const SamplingParams& p = *s.params;
      SampledToken tok = s.sampler.Sample(logits[static_cast<int64_t>(row)]);
      s.out.token_ids.push_back(tok.token);
      s.out.logprobs.push_back(tok.logprob);
      bool done = false;
      if (Contains(p.stop_token_ids, tok.token) || (!p.ignore_eos && Contains(eos_, tok.token))) {
        s.out.finish_reason = "stop";
        s.out.stop_token = tok.token;
        done = true;
      }
      if (!done && !p.stop.empty()) {
        const size_t before = s.text.size();
        auto text = tokenizer_->Decode(s.out.token_ids);
        if (!text.ok()) {
          failure = text.status();
          break;
        }
        s.text = std::move(*text);
        size_t longest = 0;
        for (const auto& stop : p.stop) longest = std::max(longest, stop.size());
        // Look again a little before the old end: the last character may have been incomplete.
        const size_t from = before > longest + 4 ? before - longest - 4 : 0;
        for (const auto& stop : p.stop) {
          const size_t at = s.text.find(stop, from);
          if (at != std::string::npos && at < s.stop_at) {
            s.stop_at = at;
            s.out.stop_string = stop;
          }
        }
        if (s.out.stop_string) {
          s.out.finish_reason = "stop";
          done = true;
        }
      }
      if (!done && static_cast<int64_t>(s.out.token_ids.size()) >= p.max_tokens) {
        s.out.finish_reason = "length";
        done = true;
      }
      if (!done) {
        keep_rows.push_back(static_cast<int64_t>(row));
        next.push_back(tok.token);
        still.push_back(active[row]);
      }
    }
    if (!failure.ok() || still.empty()) break;
    if (still.size() < active.size()) {
      at::Tensor idx = torch::tensor(keep_rows, long_cpu).to(dev);
      cache.Select(idx);
      mask = mask.index_select(0, idx);
    }
    active = std::move(still);
    const int64_t rows = static_cast<int64_t>(active.size());
    mask = torch::cat({mask, torch::ones({rows, 1}, mask.options())}, 1);
    at::Tensor step = torch::tensor(next, long_cpu).view({rows, 1}).to(dev);
    logits = model_->Logits(model_->Hidden(step, mask, {}, &cache).select(1, 0));
  }
  model_->train(was_training);
  if (!failure.ok()) return failure;

  for (auto& s : seqs) {
    if (tokenizer_ != nullptr) {
      std::vector<int32_t> text_ids = s.out.token_ids;
      if (s.out.stop_token) text_ids.pop_back();
      ALLOT_ASSIGN_OR_RETURN(s.out.text, tokenizer_->Decode(text_ids));
      if (s.out.stop_string) {
        const size_t end =
            s.stop_at + (s.params->include_stop_str_in_output ? s.out.stop_string->size() : 0);
        s.out.text.resize(std::min(end, s.out.text.size()));
      }
    }
    results[s.request].samples.resize(static_cast<size_t>(s.params->n));
    results[s.request].samples[s.sample] = std::move(s.out);
  }
  return results;
}

}  // namespace allot::models
