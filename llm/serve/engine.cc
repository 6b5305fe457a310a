#include "llm/serve/engine.h"

#include <torch/torch.h>

#include <future>

namespace allot::llm::serve {
namespace {

int64_t Sequences(const EngineJob& job) {
  int64_t n = 0;
  for (const auto& r : job.requests) n += r.params.n;
  return n;
}

}  // namespace

Engine::Engine(std::shared_ptr<models::CausalLMImpl> model,
               std::shared_ptr<const models::Tokenizer> tokenizer, EngineOptions options,
               ServeMetrics* metrics)
    : model_(std::move(model)),
      tokenizer_(std::move(tokenizer)),
      options_(options),
      metrics_(metrics),
      adapters_(model_.get()) {
  model_->eval();
  for (auto& p : model_->parameters()) p.set_requires_grad(false);
  thread_ = std::thread([this] { Loop(); });
}

Engine::~Engine() { Shutdown(); }

void Engine::Shutdown() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Status Engine::Submit(EngineJob job) {
  const int64_t seqs = Sequences(job);
  {
    std::lock_guard lock(mu_);
    if (stop_) return Unavailable("the server is shutting down");
    if (static_cast<int64_t>(queue_.size()) >= options_.max_waiting) {
      return ResourceExhausted("the server has " + std::to_string(queue_.size()) +
                               " requests waiting (max_waiting); retry later");
    }
    queue_.push_back({std::move(job), std::chrono::steady_clock::now()});
    queued_sequences_ += seqs;
  }
  cv_.notify_all();
  return Status::Ok();
}

Result<EngineOutput> Engine::Run(EngineJob job) {
  auto promise = std::make_shared<std::promise<Result<EngineOutput>>>();
  auto future = promise->get_future();
  job.done = [promise](Result<EngineOutput> r) { promise->set_value(std::move(r)); };
  ALLOT_RETURN_IF_ERROR(Submit(std::move(job)));
  return future.get();
}

Status Engine::LoadAdapter(const std::string& name, const std::string& dir) {
  std::lock_guard lock(model_mu_);
  torch::NoGradGuard no_grad;
  Status s = adapters_.Load(name, dir);
  for (auto& p : model_->parameters()) p.set_requires_grad(false);
  // Loading installs the new adapter; a batch decoding with another one gets its own back.
  if (busy_) {
    if (Status back = adapters_.Activate(running_adapter_); !back.ok()) return back;
  }
  return s;
}

Status Engine::UnloadAdapter(const std::string& name) {
  std::lock_guard lock(model_mu_);
  return adapters_.Unload(name, /*detach=*/!(busy_ && name == running_adapter_));
}

bool Engine::HasAdapter(const std::string& name) const {
  std::lock_guard lock(model_mu_);
  return adapters_.Has(name);
}

std::map<std::string, std::string> Engine::Adapters() const {
  std::lock_guard lock(model_mu_);
  return adapters_.List();
}

Status Engine::WithModel(const std::string& adapter,
                         const std::function<Status(models::CausalLMImpl&)>& fn) {
  std::lock_guard lock(model_mu_);
  torch::NoGradGuard no_grad;
  if (!adapter.empty() && !adapters_.Has(adapter)) {
    return NotFound("the lora adapter '" + adapter + "' cannot be found");
  }
  ALLOT_RETURN_IF_ERROR(adapters_.Activate(adapter));
  Status s = Status::Ok();
  try {
    s = fn(*model_);
  } catch (const std::exception& e) {
    s = Internal(std::string("scoring failed: ") + e.what());
  }
  if (busy_) ALLOT_RETURN_IF_ERROR(adapters_.Activate(running_adapter_));
  return s;
}

struct Engine::Running {
  EngineJob job;
  std::chrono::steady_clock::time_point arrived;
  EngineOutput out;
  size_t remaining = 0;  // requests not finished yet
};

void Engine::Loop() {
  models::DecodeBatch batch(model_.get(), tokenizer_.get());
  batch.set_cuda_graphs(options_.cuda_graphs && !options_.batch_invariant);
  batch.set_batch_invariant(options_.batch_invariant);
  std::map<uint64_t, Running> running;                    // by job id
  std::map<uint64_t, std::pair<uint64_t, size_t>> owner;  // request id -> (job id, index)
  uint64_t next_job = 0;
  uint64_t next_request = 0;
  std::string adapter;
  while (true) {
    std::vector<Queued> admitted;
    {
      std::unique_lock lock(mu_);
      if (batch.empty()) {
        metrics_->SetQueue(0, static_cast<int64_t>(queue_.size()));  // idle: nothing running
        cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (stop_) break;
        if (options_.batch_wait_ms > 0 && queued_sequences_ < options_.max_batch) {
          cv_.wait_for(lock, std::chrono::milliseconds(options_.batch_wait_ms),
                       [&] { return stop_ || queued_sequences_ >= options_.max_batch; });
          if (stop_) break;
        }
        adapter = queue_.front().job.adapter;
      }
      if (stop_) break;
      // Arrival order: a job for another adapter at the head stops admission until the batch
      // drains.
      int64_t seqs = batch.sequences();
      while (!queue_.empty() && queue_.front().job.adapter == adapter) {
        const int64_t n = Sequences(queue_.front().job);
        if (seqs > 0 && seqs + n > options_.max_batch) break;
        seqs += n;
        queued_sequences_ -= n;
        admitted.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      metrics_->SetQueue(seqs, static_cast<int64_t>(queue_.size()));
    }

    std::lock_guard model_lock(model_mu_);
    if (batch.empty() && !admitted.empty()) {
      if (Status s = adapters_.Activate(adapter); !s.ok()) {
        for (auto& q : admitted) q.job.done(s);
        continue;
      }
      running_adapter_ = adapter;
      busy_ = true;
    }
    for (auto& q : admitted) {
      if (!adapter.empty() && !adapters_.Has(adapter)) {
        q.job.done(NotFound("the lora adapter '" + adapter + "' cannot be found"));
        continue;
      }
      const uint64_t job_id = next_job++;
      Admit(q, batch, job_id, running, owner, &next_request);
    }
    // Jobs whose caller went away leave the batch now.
    for (auto it = running.begin(); it != running.end();) {
      Running& r = it->second;
      if (!r.job.cancelled || !r.job.cancelled->load()) {
        ++it;
        continue;
      }
      for (auto o = owner.begin(); o != owner.end();) {
        if (o->second.first != it->first) {
          ++o;
          continue;
        }
        batch.Cancel(o->first);
        o = owner.erase(o);
      }
      r.job.done(Cancelled("the client went away"));
      it = running.erase(it);
    }
    if (batch.empty()) {
      busy_ = false;
      continue;
    }
    metrics_->ObserveBatch(static_cast<int64_t>(running.size()), batch.sequences());
    Result<std::vector<std::pair<uint64_t, models::GenerationResult>>> finished =
        std::vector<std::pair<uint64_t, models::GenerationResult>>{};
    try {
      finished = batch.Step();
    } catch (const std::exception& e) {
      finished = Internal(std::string("generation failed: ") + e.what());
    }
    if (!finished.ok()) {
      for (auto& [id, r] : running) r.job.done(finished.status());
      running.clear();
      owner.clear();
      batch.Clear();
      busy_ = false;
      continue;
    }
    for (auto& [rid, result] : *finished) {
      auto o = owner.find(rid);
      if (o == owner.end()) continue;
      const auto [job_id, index] = o->second;
      owner.erase(o);
      auto it = running.find(job_id);
      if (it == running.end()) continue;  // the job already failed
      Running& r = it->second;
      r.out.results[index] = std::move(result);
      if (--r.remaining == 0) {
        Finish(r);
        running.erase(it);
      }
    }
    if (batch.empty()) busy_ = false;
  }
  // Shutting down: everything running or queued fails.
  for (auto& [id, r] : running) r.job.done(Unavailable("the server is shutting down"));
  std::deque<Queued> left;
  {
    std::lock_guard lock(mu_);
    left.swap(queue_);
  }
  for (auto& q : left) q.job.done(Unavailable("the server is shutting down"));
}

bool Engine::Admit(Queued& q, models::DecodeBatch& batch, uint64_t job_id,
                   std::map<uint64_t, Running>& running,
                   std::map<uint64_t, std::pair<uint64_t, size_t>>& owner,
                   uint64_t* next_request_id) {
  const auto& requests = q.job.requests;
  for (size_t i = 0; i < requests.size(); ++i) {
    Status s = models::ValidateGenerationRequest(requests[i], model_->config(), tokenizer_.get(),
                                                 "prompt " + std::to_string(i));
    if (!s.ok()) {
      q.job.done(s);
      return false;
    }
  }
  Running r;
  r.arrived = q.arrived;
  r.remaining = requests.size();
  r.out.results.resize(requests.size());
  r.out.adapter = adapters_.active();
  r.out.adapter_sha256 = adapters_.Sha256(r.out.adapter);
  r.job = std::move(q.job);
  auto& slot = running.emplace(job_id, std::move(r)).first->second;
  for (size_t i = 0; i < slot.job.requests.size(); ++i) {
    const uint64_t rid = (*next_request_id)++;
    Status s;
    try {
      s = batch.Add(rid, slot.job.requests[i]);
    } catch (const std::exception& e) {
      s = Internal(std::string("joining the batch failed: ") + e.what());
    }
    if (!s.ok()) {
      // Requests already added finish unseen: their owner entries point at no job.
      slot.job.done(s);
      running.erase(job_id);
      return false;
    }
    owner[rid] = {job_id, i};
  }
  if (slot.job.requests.empty()) {
    Finish(slot);
    running.erase(job_id);
  }
  return true;
}

void Engine::Finish(Running& r) {
  if (r.job.top_logprobs > 0) {
    for (size_t i = 0; i < r.job.requests.size(); ++i) {
      r.out.top.emplace_back();
      Status s;
      try {
        s = TopLogprobs(r.job.requests[i], r.out.results[i], r.job.top_logprobs, &r.out.top.back());
      } catch (const std::exception& e) {
        s = Internal(std::string("top_logprobs failed: ") + e.what());
      }
      if (!s.ok()) {
        r.job.done(s);
        return;
      }
    }
  }
  if (r.job.prompt_logprobs >= 0) {
    for (const auto& request : r.job.requests) {
      r.out.prompt.emplace_back();
      Status s;
      try {
        s = PromptLogprobs(request.prompt, r.job.prompt_logprobs, &r.out.prompt.back());
      } catch (const std::exception& e) {
        s = Internal(std::string("prompt_logprobs failed: ") + e.what());
      }
      if (!s.ok()) {
        r.job.done(s);
        return;
      }
    }
  }
  r.job.done(std::move(r.out));
}

// The raw log-probs (logits not divided by any temperature, as vLLM reports prompt log-probs)
// from one forward pass over the prompt, with the adapter that decoded the job still installed.
// Logits are formed a chunk of rows at a time: [prompt, vocab] floats at once could be GBs.
Status Engine::PromptLogprobs(const std::vector<int32_t>& prompt, int k,
                              std::vector<PromptTokenLogprob>* out) {
  torch::NoGradGuard no_grad;
  const int64_t p = static_cast<int64_t>(prompt.size());
  if (p < 2) return Status::Ok();
  const int64_t kk = std::min<int64_t>(k, model_->config().vocab_size);
  std::vector<int64_t> ids(prompt.begin(), prompt.end());
  at::Tensor input = torch::tensor(ids, torch::kLong).view({1, -1}).to(model_->device());
  at::Tensor hidden = model_->Hidden(input).squeeze(0);
  at::Tensor targets = input.squeeze(0).narrow(0, 1, p - 1).unsqueeze(1);
  constexpr int64_t kChunk = 256;
  for (int64_t from = 0; from < p - 1; from += kChunk) {
    const int64_t rows = std::min(kChunk, p - 1 - from);
    at::Tensor logp = torch::log_softmax(model_->Logits(hidden.narrow(0, from, rows)), -1);
    at::Tensor chosen = logp.gather(1, targets.narrow(0, from, rows));  // [rows, 1]
    at::Tensor rank = (logp > chosen).sum(1) + 1;
    at::Tensor values, indices;
    if (kk > 0) std::tie(values, indices) = logp.topk(kk, -1);
    chosen = chosen.to(torch::kCPU).contiguous();
    rank = rank.to(torch::kCPU).to(torch::kLong).contiguous();
    if (kk > 0) {
      values = values.to(torch::kCPU).contiguous();
      indices = indices.to(torch::kCPU).contiguous();
    }
    for (int64_t i = 0; i < rows; ++i) {
      PromptTokenLogprob e;
      e.id = prompt[static_cast<size_t>(from + i + 1)];
      e.logprob = chosen.data_ptr<float>()[i];
      e.rank = rank.data_ptr<int64_t>()[i];
      for (int64_t j = 0; j < kk; ++j) {
        e.top.push_back({static_cast<int32_t>(indices.data_ptr<int64_t>()[i * kk + j]),
                         values.data_ptr<float>()[i * kk + j]});
      }
      out->push_back(std::move(e));
    }
  }
  return Status::Ok();
}

// The alternatives are recomputed with one forward pass over prompt + sample, under the same
// distribution the sampler reports (logits / temperature, raw logits when greedy).
Status Engine::TopLogprobs(const models::GenerationRequest& request,
                           const models::GenerationResult& result, int k,
                           std::vector<std::vector<std::vector<TopToken>>>* out) {
  torch::NoGradGuard no_grad;
  const int64_t vocab = model_->config().vocab_size;
  const int64_t kk = std::min<int64_t>(k, vocab);
  for (const auto& sample : result.samples) {
    std::vector<std::vector<TopToken>> steps;
    if (!sample.token_ids.empty()) {
      std::vector<int64_t> ids(request.prompt.begin(), request.prompt.end());
      ids.insert(ids.end(), sample.token_ids.begin(), sample.token_ids.end() - 1);
      const int64_t p = static_cast<int64_t>(request.prompt.size());
      const int64_t t = static_cast<int64_t>(sample.token_ids.size());
      at::Tensor input = torch::tensor(ids, torch::kLong).view({1, -1}).to(model_->device());
      at::Tensor hidden = model_->Hidden(input).squeeze(0).narrow(0, p - 1, t);
      at::Tensor logits = model_->Logits(hidden);
      if (request.params.temperature > 0) logits = logits / request.params.temperature;
      auto [values, indices] = torch::log_softmax(logits, -1).topk(kk, -1);
      values = values.to(torch::kCPU).contiguous();
      indices = indices.to(torch::kCPU).contiguous();
      const float* v = values.data_ptr<float>();
      const int64_t* ix = indices.data_ptr<int64_t>();
      for (int64_t s = 0; s < t; ++s) {
        std::vector<TopToken> step;
        for (int64_t j = 0; j < kk; ++j) {
          step.push_back({static_cast<int32_t>(ix[s * kk + j]), v[s * kk + j]});
        }
        steps.push_back(std::move(step));
      }
    }
    out->push_back(std::move(steps));
  }
  return Status::Ok();
}

}  // namespace allot::llm::serve
