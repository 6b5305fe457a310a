// The serving engine: one model, a queue of generation jobs, and a scheduler thread that
// decodes them with continuous batching.
//
// The scheduler keeps one models::DecodeBatch running. Before every decode step it admits
// queued jobs of the batch's adapter (up to `max_batch` sequences), so a request joins between
// steps instead of waiting for the batch to drain; finished requests leave at once. When the
// batch is empty, the oldest queued job picks the adapter, after waiting up to `batch_wait_ms`
// for company. Jobs for another adapter wait until the batch drains: adapters are swapped
// between batches, never within one, and the queue is served in arrival order.
//
// Thread-safe. Job callbacks run on the scheduler thread and must not block.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"
#include "llm/serve/adapter_store.h"
#include "llm/serve/serve_metrics.h"
#include "models/causal_lm.h"
#include "models/generation.h"
#include "models/tokenizer/tokenizer.h"

namespace allot::llm::serve {

struct EngineOptions {
  int max_batch = 32;     // sequences per batch
  int batch_wait_ms = 2;  // wait for more jobs before a batch starts
  int max_waiting = 1024;
  bool cuda_graphs = false;  // DecodeBatch::set_cuda_graphs
  // DecodeBatch::set_batch_invariant: a seeded request samples the same tokens and log-probs
  // whatever else is decoded with it (each sequence decoded on its own; no CUDA graphs).
  bool batch_invariant = false;
};

struct TopToken {
  int32_t id = 0;
  float logprob = 0.0f;
};

// vLLM's prompt_logprobs at one prompt position: the prompt token's log-prob and rank (1 = the
// most likely token), and the most likely alternatives.
struct PromptTokenLogprob {
  int32_t id = 0;
  float logprob = 0.0f;
  int64_t rank = 0;
  std::vector<TopToken> top;
};

struct EngineOutput {
  // The adapter installed in the model while the job decoded ("" = the base model): what the
  // reply reports as its "model", so that a rollout records the version that really sampled.
  std::string adapter;
  std::string adapter_sha256;  // AdapterStore::Sha256 of `adapter` ("" for the base model)
  std::vector<models::GenerationResult> results;  // one per request of the job
  // top[r][s][t]: the `top_logprobs` most likely tokens at step t of sample s of request r.
  std::vector<std::vector<std::vector<std::vector<TopToken>>>> top;
  // With EngineJob::prompt_logprobs >= 0: prompt[r][t] for prompt token t >= 1 of request r
  // (the first token has none), under the same model and adapter that decoded the job.
  std::vector<std::vector<PromptTokenLogprob>> prompt;
};

struct EngineJob {
  std::string adapter;  // "" = the base model
  std::vector<models::GenerationRequest> requests;
  int top_logprobs = 0;
  int prompt_logprobs = -1;  // alternatives per prompt position; -1 = no prompt log-probs
  std::function<void(Result<EngineOutput>)> done;
  // Set by the caller when nobody wants the result any more (a streaming client hung up); the
  // job leaves the batch before the next step and `done` gets Cancelled.
  std::shared_ptr<std::atomic<bool>> cancelled;
};

class Engine {
 public:
  // The model is put in eval mode with gradients off; the engine owns it from here on.
  Engine(std::shared_ptr<models::CausalLMImpl> model,
         std::shared_ptr<const models::Tokenizer> tokenizer, EngineOptions options,
         ServeMetrics* metrics);
  ~Engine();  // Shutdown()
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Queues a job; ResourceExhausted when the queue is full, Unavailable after Shutdown.
  Status Submit(EngineJob job);
  // Submits and waits.
  Result<EngineOutput> Run(EngineJob job);

  Status LoadAdapter(const std::string& name, const std::string& dir);
  Status UnloadAdapter(const std::string& name);
  bool HasAdapter(const std::string& name) const;
  std::map<std::string, std::string> Adapters() const;

  // Runs `fn` on the model with adapter `adapter` ("" = the base model) installed, between two
  // decode steps of the running batch, whose adapter is put back afterwards. For one-pass
  // scoring (the /pooling route); gradients are off. NotFound for an unknown adapter.
  Status WithModel(const std::string& adapter,
                   const std::function<Status(models::CausalLMImpl&)>& fn);

  // Stops the scheduler after the running batch; queued jobs fail with Unavailable.
  void Shutdown();

  const models::TransformerConfig& model_config() const { return model_->config(); }
  const models::Tokenizer& tokenizer() const { return *tokenizer_; }

 private:
  struct Queued {
    EngineJob job;
    std::chrono::steady_clock::time_point arrived;
  };
  struct Running;
  void Loop();
  // Validates and adds a job's requests to the batch; false (job failed) otherwise.
  bool Admit(Queued& q, models::DecodeBatch& batch, uint64_t job_id,
             std::map<uint64_t, Running>& running,
             std::map<uint64_t, std::pair<uint64_t, size_t>>& owner, uint64_t* next_request_id);
  void Finish(Running& r);
  Status TopLogprobs(const models::GenerationRequest& request,
                     const models::GenerationResult& result, int k,
                     std::vector<std::vector<std::vector<TopToken>>>* out);
  Status PromptLogprobs(const std::vector<int32_t>& prompt, int k,
                        std::vector<PromptTokenLogprob>* out);

  std::shared_ptr<models::CausalLMImpl> model_;
  std::shared_ptr<const models::Tokenizer> tokenizer_;
  EngineOptions options_;
  ServeMetrics* metrics_;

  mutable std::mutex model_mu_;  // the model, the adapter store, running_adapter_, busy_
  AdapterStore adapters_;
  std::string running_adapter_;  // the adapter of the decoding batch
  bool busy_ = false;            // a batch is decoding

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Queued> queue_;
  int64_t queued_sequences_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace allot::llm::serve
