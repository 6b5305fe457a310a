#include "models/generation.h"

#include <torch/torch.h>

#include <algorithm>

#include "models/static_decoder.h"

namespace allot::models {
namespace {

struct Live {
  size_t request = 0;
  size_t sample = 0;
  const GenerationRequest* req = nullptr;
  const SamplingParams* params = nullptr;
  Sampler sampler;
  GeneratedSequence out;
  std::string text;                    // decoded so far (only when the request has stop strings)
  size_t stop_at = std::string::npos;  // byte offset of the matched stop string in `text`

  Live(size_t r, size_t s, const GenerationRequest* q)
      : request(r), sample(s), req(q), params(&q->params), sampler(q->params, s) {}
};

bool Contains(const std::vector<int32_t>& ids, int32_t id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

// Draws the next token of each sequence from its row of `logits` [seqs, vocab].
std::vector<SampledToken> SampleNext(const std::vector<Live*>& seqs, const at::Tensor& logits) {
  std::vector<Sampler*> samplers;
  samplers.reserve(seqs.size());
  for (Live* s : seqs) samplers.push_back(&s->sampler);
  return SampleRows(samplers, logits);
}

// Records the sequence's sampled next token. Returns whether the sequence has finished (stop
// token, EOS, stop string or max_tokens).
Result<bool> Advance(Live& s, const SampledToken& tok, const std::vector<int32_t>& eos,
                     const Tokenizer* tokenizer) {
  const SamplingParams& p = *s.params;
  s.out.token_ids.push_back(tok.token);
  s.out.logprobs.push_back(tok.logprob);
  bool done = false;
  if (Contains(p.stop_token_ids, tok.token) || (!p.ignore_eos && Contains(eos, tok.token))) {
    s.out.finish_reason = "stop";
    s.out.stop_token = tok.token;
    done = true;
  }
  if (!done && !p.stop.empty()) {
    const size_t before = s.text.size();
    ALLOT_ASSIGN_OR_RETURN(s.text, tokenizer->Decode(s.out.token_ids));
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
  if (s.req->on_token) s.req->on_token(s.sample, tok, done);
  return done;
}

// Decodes the finished sequence's text (without the stop token, cut at the stop string).
Status FinishText(Live& s, const Tokenizer* tokenizer) {
  if (tokenizer == nullptr) return Status::Ok();
  std::vector<int32_t> text_ids = s.out.token_ids;
  if (s.out.stop_token) text_ids.pop_back();
  ALLOT_ASSIGN_OR_RETURN(s.out.text, tokenizer->Decode(text_ids));
  if (s.out.stop_string) {
    const size_t end =
        s.stop_at + (s.params->include_stop_str_in_output ? s.out.stop_string->size() : 0);
    s.out.text.resize(std::min(end, s.out.text.size()));
  }
  return Status::Ok();
}

std::vector<int32_t> EosOf(const CausalLMImpl& model) {
  std::vector<int32_t> eos;
  for (int64_t id : model.config().eos_token_ids) eos.push_back(static_cast<int32_t>(id));
  return eos;
}

}  // namespace

Status ValidateGenerationRequest(const GenerationRequest& r, const TransformerConfig& config,
                                 const Tokenizer* tokenizer, const std::string& where) {
  if (Status s = r.params.Validate(); !s.ok()) return s.Annotate(where);
  if (r.prompt.empty()) return InvalidArgument(where + ": empty prompt");
  for (int32_t id : r.prompt) {
    if (id < 0 || id >= config.vocab_size) {
      return InvalidArgument(where + ": prompt token id " + std::to_string(id) +
                             " is outside the vocabulary [0, " + std::to_string(config.vocab_size) +
                             ")");
    }
  }
  const int64_t total = static_cast<int64_t>(r.prompt.size()) + r.params.max_tokens;
  if (total > config.max_position_embeddings) {
    return InvalidArgument(where + ": prompt (" + std::to_string(r.prompt.size()) +
                           " tokens) + max_tokens (" + std::to_string(r.params.max_tokens) +
                           ") exceeds the model's max_position_embeddings (" +
                           std::to_string(config.max_position_embeddings) + ")");
  }
  if (!r.params.stop.empty() && tokenizer == nullptr) {
    return InvalidArgument(where + ": stop strings need a tokenizer");
  }
  return Status::Ok();
}

Generator::Generator(CausalLMImpl* model, const Tokenizer* tokenizer,
                     std::vector<int32_t> eos_token_ids)
    : model_(model), tokenizer_(tokenizer), eos_(std::move(eos_token_ids)) {}

Generator::Generator(CausalLMImpl* model, const Tokenizer* tokenizer)
    : model_(model), tokenizer_(tokenizer), eos_(EosOf(*model)) {}

Result<std::vector<GenerationResult>> Generator::Generate(
    const std::vector<GenerationRequest>& requests) {
  const auto& config = model_->config();
  for (size_t i = 0; i < requests.size(); ++i) {
    ALLOT_RETURN_IF_ERROR(
        ValidateGenerationRequest(requests[i], config, tokenizer_, "request " + std::to_string(i)));
  }
  std::vector<GenerationResult> results(requests.size());
  if (requests.empty()) return results;

  std::vector<Live> seqs;
  for (size_t i = 0; i < requests.size(); ++i) {
    for (int64_t s = 0; s < requests[i].params.n; ++s) {
      seqs.emplace_back(i, static_cast<size_t>(s), &requests[i]);
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
  int64_t longest = 0;
  for (const auto& r : requests) longest = std::max(longest, r.params.max_tokens);
  // The last token sampled is never fed back: width + longest - 1 columns are ever written.
  StaticDecoder decoder(model_, cache, mask, static_cast<int64_t>(width) + longest);

  std::vector<size_t> active(seqs.size());
  for (size_t i = 0; i < active.size(); ++i) active[i] = i;
  Status failure;
  while (!active.empty()) {
    std::vector<int64_t> keep_rows;
    std::vector<int64_t> next;
    std::vector<size_t> still;
    std::vector<Live*> live;
    for (size_t i : active) live.push_back(&seqs[i]);
    const std::vector<SampledToken> tokens = SampleNext(live, logits);
    for (size_t row = 0; row < active.size(); ++row) {
      Live& s = *live[row];
      auto done = Advance(s, tokens[row], eos_, tokenizer_);
      if (!done.ok()) {
        failure = done.status();
        break;
      }
      if (!*done) {
        keep_rows.push_back(static_cast<int64_t>(row));
        next.push_back(s.out.token_ids.back());
        still.push_back(active[row]);
      }
    }
    if (!failure.ok() || still.empty()) break;
    if (still.size() < active.size()) decoder.Select(torch::tensor(keep_rows, long_cpu).to(dev));
    active = std::move(still);
    logits = decoder.Step(torch::tensor(next, long_cpu).to(dev));
  }
  model_->train(was_training);
  if (!failure.ok()) return failure;

  for (auto& s : seqs) {
    ALLOT_RETURN_IF_ERROR(FinishText(s, tokenizer_));
    results[s.request].samples.resize(static_cast<size_t>(s.params->n));
    results[s.request].samples[s.sample] = std::move(s.out);
  }
  return results;
}

// ---------------------------------------------------------------------------------------------
// DecodeBatch

struct DecodeBatch::State {
  struct Request {
    GenerationRequest request;
    GenerationResult result;
    int64_t running = 0;  // samples not finished yet
  };

  // Forgets the batch's rows (not the waiting requests).
  void DropRows() {
    rows.clear();
    row_ids.clear();
    decoder.reset();
    logits = at::Tensor();
    row_decoders.clear();
    row_logits.clear();
  }

  // Records each row's sampled token; the rows still going are `keep` (with their token in
  // `next`), the requests all of whose samples ended go to `finished`.
  Status Record(const std::vector<SampledToken>& tokens, const std::vector<int32_t>& eos,
                const Tokenizer* tokenizer, std::vector<int64_t>* keep, std::vector<int64_t>* next,
                std::vector<std::pair<uint64_t, GenerationResult>>* finished) {
    for (size_t row = 0; row < rows.size(); ++row) {
      Live& s = *rows[row];
      ALLOT_ASSIGN_OR_RETURN(bool done, Advance(s, tokens[row], eos, tokenizer));
      if (!done) {
        keep->push_back(static_cast<int64_t>(row));
        next->push_back(s.out.token_ids.back());
        continue;
      }
      ALLOT_RETURN_IF_ERROR(FinishText(s, tokenizer));
      const uint64_t id = row_ids[row];
      auto& req = *requests.at(id);
      req.result.samples[s.sample] = std::move(s.out);
      if (--req.running == 0) {
        finished->emplace_back(id, std::move(req.result));
        requests.erase(id);
      }
    }
    return Status::Ok();
  }

  std::map<uint64_t, std::unique_ptr<Request>> requests;
  std::vector<uint64_t> waiting;            // added, not prefilled yet, in arrival order
  int64_t waiting_rows = 0;                 // their samples
  std::vector<std::unique_ptr<Live>> rows;  // one per batch row
  std::vector<uint64_t> row_ids;            // the request id of each row
  std::unique_ptr<StaticDecoder> decoder;   // the rows' cache, mask and positions
  at::Tensor logits;                        // [rows, vocab] float32: next-token logits of each row
  // Batch-invariant decoding: one decoder ([1, ...] buffers) and [1, vocab] logits per row, in
  // place of `decoder` and `logits`.
  std::vector<std::unique_ptr<StaticDecoder>> row_decoders;
  std::vector<at::Tensor> row_logits;
};

DecodeBatch::DecodeBatch(CausalLMImpl* model, const Tokenizer* tokenizer)
    : model_(model),
      tokenizer_(tokenizer),
      eos_(EosOf(*model)),
      state_(std::make_unique<State>()) {}

DecodeBatch::~DecodeBatch() = default;

int64_t DecodeBatch::sequences() const {
  return static_cast<int64_t>(state_->rows.size()) + state_->waiting_rows;
}

int64_t DecodeBatch::requests() const { return static_cast<int64_t>(state_->requests.size()); }

void DecodeBatch::Clear() { state_ = std::make_unique<State>(); }

namespace {

// Static cache columns for a batch of `length` columns whose rows still sample up to `remaining`
// tokens each (the last one is never fed back), rounded up to a multiple of 64 so that batches
// of similar lengths share a shape.
int64_t DecodeCapacity(int64_t length, int64_t remaining) {
  constexpr int64_t kRound = 64;
  const int64_t need = length + std::max<int64_t>(remaining, 1);
  return (need + kRound - 1) / kRound * kRound;
}

at::Tensor PadLeft(const at::Tensor& t, int64_t dim, int64_t to) {
  const int64_t have = t.size(dim);
  if (have == to) return t;
  std::vector<int64_t> shape = t.sizes().vec();
  shape[dim] = to - have;
  return torch::cat({torch::zeros(shape, t.options()), t}, dim);
}

}  // namespace

Status DecodeBatch::Add(uint64_t id, GenerationRequest request) {
  ALLOT_RETURN_IF_ERROR(ValidateGenerationRequest(request, model_->config(), tokenizer_,
                                                  "request " + std::to_string(id)));
  State& st = *state_;
  if (st.requests.count(id) > 0) {
    return InvalidArgument("request " + std::to_string(id) + " is already in the batch");
  }
  auto req = std::make_unique<State::Request>();
  req->request = std::move(request);
  const int64_t n = req->request.params.n;
  req->running = n;
  req->result.samples.resize(static_cast<size_t>(n));
  st.requests[id] = std::move(req);
  st.waiting.push_back(id);
  st.waiting_rows += n;
  return Status::Ok();
}

void DecodeBatch::PrefillWaiting() {
  State& st = *state_;
  if (batch_invariant_) {
    while (!st.waiting.empty()) {
      const uint64_t id = st.waiting.front();
      PrefillAlone(id);
      st.waiting.erase(st.waiting.begin());
      st.waiting_rows -= st.requests.at(id)->request.params.n;
    }
    return;
  }
  // Groups in arrival order; each group leaves `waiting` once it is in the batch, so a failed
  // forward pass leaves no request both prefilled and waiting.
  while (!st.waiting.empty()) {
    size_t take = 0;
    int64_t rows = 0;
    int64_t width = 0;
    for (; take < st.waiting.size(); ++take) {
      const GenerationRequest& r = st.requests.at(st.waiting[take])->request;
      const int64_t n = r.params.n;
      const int64_t w = std::max(width, static_cast<int64_t>(r.prompt.size()));
      if (take > 0 && (rows + n) * w > kPrefillTokens) break;
      rows += n;
      width = w;
    }
    Prefill(std::vector<uint64_t>(st.waiting.begin(), st.waiting.begin() + take));
    st.waiting.erase(st.waiting.begin(), st.waiting.begin() + take);
    st.waiting_rows -= rows;
  }
}

void DecodeBatch::Prefill(const std::vector<uint64_t>& ids) {
  State& st = *state_;
  const auto& config = model_->config();
  const at::Device dev = model_->device();
  int64_t n = 0;
  int64_t len = 0;
  for (uint64_t id : ids) {
    const GenerationRequest& r = st.requests.at(id)->request;
    n += r.params.n;
    len = std::max(len, static_cast<int64_t>(r.prompt.size()));
  }
  // Left-padded, as in Generator::Generate: the last column holds every row's last prompt token.
  std::vector<int64_t> flat_ids(static_cast<size_t>(n * len), 0);
  std::vector<int64_t> flat_mask(static_cast<size_t>(n * len), 0);
  int64_t row = 0;
  for (uint64_t id : ids) {
    const GenerationRequest& r = st.requests.at(id)->request;
    const auto p = static_cast<int64_t>(r.prompt.size());
    for (int64_t s = 0; s < r.params.n; ++s, ++row) {
      const int64_t start = row * len + len - p;
      std::copy(r.prompt.begin(), r.prompt.end(), flat_ids.begin() + start);
      std::fill(flat_mask.begin() + start, flat_mask.begin() + start + p, 1);
    }
  }
  const at::Tensor ids_t = torch::tensor(flat_ids, torch::kLong).view({n, len}).to(dev);
  const at::Tensor mask = torch::tensor(flat_mask, torch::kLong).view({n, len}).to(dev);
  KVCache cache(config.num_hidden_layers);
  at::Tensor logits = model_->Logits(model_->Hidden(ids_t, mask, {}, &cache).select(1, len - 1));

  // The most tokens any row, old or new, may still sample.
  int64_t remaining = 0;
  for (const auto& row : st.rows) {
    remaining = std::max(remaining,
                         row->params->max_tokens - static_cast<int64_t>(row->out.token_ids.size()));
  }
  for (uint64_t id : ids) {
    remaining = std::max(remaining, st.requests.at(id)->request.params.max_tokens);
  }
  if (st.rows.empty()) {
    st.decoder = std::make_unique<StaticDecoder>(model_, cache, mask,
                                                 DecodeCapacity(len, remaining), cuda_graphs_);
    st.logits = logits;
  } else {
    // Merge: both caches left-padded to the longer length, the new rows after the old ones.
    const int64_t old_len = st.decoder->length();
    const int64_t width = std::max(old_len, len);
    const auto old_kv = st.decoder->Contents();
    KVCache merged(config.num_hidden_layers);
    for (int64_t l = 0; l < config.num_hidden_layers; ++l) {
      const auto [nk, nv] = cache.Stored(l);
      at::Tensor k = torch::cat({PadLeft(old_kv[l].first, 2, width), PadLeft(nk, 2, width)}, 0);
      at::Tensor v = torch::cat({PadLeft(old_kv[l].second, 2, width), PadLeft(nv, 2, width)}, 0);
      merged.Append(l, k, v);
    }
    const at::Tensor merged_mask = torch::cat(
        {PadLeft(st.decoder->Mask(), 1, width), PadLeft(mask.to(torch::kBool), 1, width)}, 0);
    st.decoder.reset();  // its buffers go before the new ones are allocated
    st.decoder = std::make_unique<StaticDecoder>(model_, merged, merged_mask,
                                                 DecodeCapacity(width, remaining), cuda_graphs_);
    st.logits = torch::cat({st.logits, logits}, 0);
  }
  for (uint64_t id : ids) {
    const GenerationRequest& r = st.requests.at(id)->request;
    for (int64_t s = 0; s < r.params.n; ++s) {
      st.rows.push_back(std::make_unique<Live>(0, static_cast<size_t>(s), &r));
      st.row_ids.push_back(id);
    }
  }
}

void DecodeBatch::PrefillAlone(uint64_t id) {
  State& st = *state_;
  const GenerationRequest& r = st.requests.at(id)->request;
  const at::Device dev = model_->device();
  const auto len = static_cast<int64_t>(r.prompt.size());
  const std::vector<int64_t> prompt(r.prompt.begin(), r.prompt.end());
  const at::Tensor ids = torch::tensor(prompt, torch::kLong).view({1, len}).to(dev);
  const at::Tensor mask = torch::ones({1, len}, torch::kLong).to(dev);
  KVCache cache(model_->config().num_hidden_layers);
  const at::Tensor logits =
      model_->Logits(model_->Hidden(ids, mask, {}, &cache).select(1, len - 1));
  // The samples of one request share the prompt's pass, each copied into a cache of its own
  // whose capacity is a function of the request alone.
  const int64_t capacity = DecodeCapacity(len, r.params.max_tokens);
  for (int64_t s = 0; s < r.params.n; ++s) {
    st.rows.push_back(std::make_unique<Live>(0, static_cast<size_t>(s), &r));
    st.row_ids.push_back(id);
    st.row_decoders.push_back(std::make_unique<StaticDecoder>(model_, cache, mask, capacity));
    st.row_logits.push_back(logits);
  }
}

Result<std::vector<std::pair<uint64_t, GenerationResult>>> DecodeBatch::StepRowsAlone() {
  State& st = *state_;
  std::vector<std::pair<uint64_t, GenerationResult>> finished;
  std::vector<SampledToken> tokens;
  tokens.reserve(st.rows.size());
  for (size_t row = 0; row < st.rows.size(); ++row) {
    tokens.push_back(SampleNext({st.rows[row].get()}, st.row_logits[row]).front());
  }
  std::vector<int64_t> keep;
  std::vector<int64_t> next;
  ALLOT_RETURN_IF_ERROR(st.Record(tokens, eos_, tokenizer_, &keep, &next, &finished));
  std::vector<std::unique_ptr<Live>> rows;
  std::vector<uint64_t> row_ids;
  std::vector<std::unique_ptr<StaticDecoder>> decoders;
  std::vector<at::Tensor> logits;
  const at::Device dev = model_->device();
  for (size_t i = 0; i < keep.size(); ++i) {
    const auto r = static_cast<size_t>(keep[i]);
    rows.push_back(std::move(st.rows[r]));
    row_ids.push_back(st.row_ids[r]);
    decoders.push_back(std::move(st.row_decoders[r]));
    logits.push_back(decoders.back()->Step(torch::tensor({next[i]}, torch::kLong).to(dev)));
  }
  st.rows = std::move(rows);
  st.row_ids = std::move(row_ids);
  st.row_decoders = std::move(decoders);
  st.row_logits = std::move(logits);
  return finished;
}

Status DecodeBatch::Cancel(uint64_t id) {
  State& st = *state_;
  if (st.requests.count(id) == 0) {
    return NotFound("request " + std::to_string(id) + " is not in the batch");
  }
  if (auto w = std::find(st.waiting.begin(), st.waiting.end(), id); w != st.waiting.end()) {
    st.waiting_rows -= st.requests.at(id)->request.params.n;
    st.waiting.erase(w);
    st.requests.erase(id);
    return Status::Ok();
  }
  std::vector<int64_t> keep;
  std::vector<std::unique_ptr<Live>> rows;
  std::vector<uint64_t> row_ids;
  for (size_t r = 0; r < st.rows.size(); ++r) {
    if (st.row_ids[r] == id) continue;
    keep.push_back(static_cast<int64_t>(r));
    rows.push_back(std::move(st.rows[r]));
    row_ids.push_back(st.row_ids[r]);
  }
  st.requests.erase(id);
  if (keep.empty()) {
    st.DropRows();
    return Status::Ok();
  }
  if (batch_invariant_) {
    std::vector<std::unique_ptr<StaticDecoder>> decoders;
    std::vector<at::Tensor> logits;
    for (int64_t r : keep) {
      decoders.push_back(std::move(st.row_decoders[static_cast<size_t>(r)]));
      logits.push_back(st.row_logits[static_cast<size_t>(r)]);
    }
    st.row_decoders = std::move(decoders);
    st.row_logits = std::move(logits);
    st.rows = std::move(rows);
    st.row_ids = std::move(row_ids);
    return Status::Ok();
  }
  torch::NoGradGuard no_grad;
  at::Tensor idx = torch::tensor(keep, torch::kLong).to(model_->device());
  st.decoder->Select(idx);
  st.logits = st.logits.index_select(0, idx);
  st.rows = std::move(rows);
  st.row_ids = std::move(row_ids);
  return Status::Ok();
}

Result<std::vector<std::pair<uint64_t, GenerationResult>>> DecodeBatch::Step() {
  State& st = *state_;
  std::vector<std::pair<uint64_t, GenerationResult>> finished;
  torch::NoGradGuard no_grad;
  if (!st.waiting.empty()) {
    model_->eval();
    PrefillWaiting();
  }
  if (st.rows.empty()) return finished;
  if (batch_invariant_) {
    ALLOT_ASSIGN_OR_RETURN(finished, StepRowsAlone());
    if (st.rows.empty()) Clear();
    return finished;
  }
  std::vector<int64_t> keep_rows;
  std::vector<int64_t> next;
  std::vector<Live*> live;
  for (const auto& row : st.rows) live.push_back(row.get());
  const std::vector<SampledToken> tokens = SampleNext(live, st.logits);
  ALLOT_RETURN_IF_ERROR(st.Record(tokens, eos_, tokenizer_, &keep_rows, &next, &finished));
  if (keep_rows.empty()) {
    Clear();
    return finished;
  }
  const at::Device dev = model_->device();
  if (keep_rows.size() < st.rows.size()) {
    at::Tensor idx = torch::tensor(keep_rows, torch::kLong).to(dev);
    st.decoder->Select(idx);
    std::vector<std::unique_ptr<Live>> rows;
    std::vector<uint64_t> row_ids;
    for (int64_t r : keep_rows) {
      rows.push_back(std::move(st.rows[static_cast<size_t>(r)]));
      row_ids.push_back(st.row_ids[static_cast<size_t>(r)]);
    }
    st.rows = std::move(rows);
    st.row_ids = std::move(row_ids);
  }
  st.logits = st.decoder->Step(torch::tensor(next, torch::kLong).to(dev));
  return finished;
}

}  // namespace allot::models
