// Client: the endpoint pool every rollout worker uses to talk to LLMs.
//
// Endpoints are named in config (EndpointConfig); a request names one by its logical name. Calls
// are asynchronous: a callback (run on an event-loop thread; it must not block) or a future.
// Each call gets a deadline, retries with jittered exponential backoff on connect errors,
// timeouts, 429 (honouring Retry-After) and 5xx, goes through the endpoint's concurrency limit,
// token bucket and circuit breaker, and yields a CallRecord (tokens, latency, retries, $ cost,
// energy) that is also added to the run-level ledger.
//
// Thread-safe. Destroying the Client completes everything still pending with kCancelled; do
// not destroy it from inside one of its own callbacks.
#pragma once

#include <functional>
#include <future>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/config/schema.h"
#include "core/status.h"
#include "llm/accounting.h"
#include "llm/endpoint_config.h"
#include "llm/openai_types.h"

namespace allot::llm {

class HttpTransport;
struct HttpResponse;

struct ClientOptions {
  int threads = 2;  // event-loop threads shared by all endpoints
  GpuProfile gpu;

  void Describe(config::Visitor& v) {
    v.Field("threads", threads, {.doc = "HTTP event-loop threads", .min = 1, .max = 64});
    v.Field("gpu", gpu, {.doc = "GPU assumed for the energy estimate (R2-Reasoner: A100 SXM)"});
  }
};

struct CallOptions {
  double deadline_s = 0.0;  // whole call incl. retries; 0 = the endpoint's limits.deadline_s
  // Streaming (SSE) when set: called on a loop thread for each chunk, in order.
  std::function<void(const StreamChunk&)> on_chunk;
};

struct EndpointStats {
  int in_flight = 0;
  int queued = 0;
  bool breaker_open = false;
  int breaker_opened = 0;  // times the breaker has opened
};

template <typename T>
using Callback = std::function<void(Result<T>)>;

class Client {
 public:
  static Result<std::unique_ptr<Client>> Create(std::vector<EndpointConfig> endpoints,
                                                const ClientOptions& options = {});
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // POST /v1/completions (prompt as text or token ids).
  void Complete(std::string_view endpoint, const CompletionRequest& request,
                Callback<Completion> done, const CallOptions& options = {});
  std::future<Result<Completion>> Complete(std::string_view endpoint,
                                           const CompletionRequest& request,
                                           const CallOptions& options = {});
  // POST /v1/chat/completions.
  void Chat(std::string_view endpoint, const ChatRequest& request, Callback<Completion> done,
            const CallOptions& options = {});
  std::future<Result<Completion>> Chat(std::string_view endpoint, const ChatRequest& request,
                                       const CallOptions& options = {});

  std::future<Result<std::vector<ModelInfo>>> Models(std::string_view endpoint);  // GET /v1/models
  std::future<Status> Health(std::string_view endpoint);                          // GET /health
  std::future<Result<std::vector<int64_t>>> Tokenize(std::string_view endpoint,
                                                     const std::string& text,
                                                     bool add_special_tokens = true);
  std::future<Result<std::string>> Detokenize(std::string_view endpoint,
                                              const std::vector<int64_t>& ids);
  std::future<Status> LoadLoraAdapter(std::string_view endpoint, const LoraAdapter& adapter);
  std::future<Status> UnloadLoraAdapter(std::string_view endpoint, const std::string& name);

  const EndpointConfig* endpoint(std::string_view name) const;
  std::vector<std::string> endpoint_names() const;
  EndpointStats stats(std::string_view endpoint) const;
  const GpuProfile& gpu() const { return options_.gpu; }
  // Run-level totals of every call made through this client.
  UsageReport usage() const { return ledger_.Snapshot(); }
  void ResetUsage() { ledger_.Reset(); }

  struct Endpoint;
  struct CallState;

 private:
  Client() = default;
  Endpoint* Find(std::string_view name) const;
  Status NotConfigured(std::string_view name) const;
  void RunCompletion(Endpoint* ep, const char* path, std::string body, bool chat,
                     Callback<Completion> done, const CallOptions& options);
  void StartRaw(Endpoint* ep, bool post, const char* path, std::string body,
                std::function<void(Status, std::string body, const std::string& where)> done);

  void Admit(std::shared_ptr<CallState> st);
  void Launch(std::shared_ptr<CallState> st);
  void Attempt(std::shared_ptr<CallState> st);
  void OnResponse(std::shared_ptr<CallState> st, HttpResponse&& r);
  void Release(Endpoint& ep);
  void Finish(std::shared_ptr<CallState> st, Status s, HttpResponse&& r);
  void Probe(Endpoint* ep);

  ClientOptions options_;
  std::vector<std::unique_ptr<Endpoint>> endpoints_;
  UsageLedger ledger_;
  std::unique_ptr<HttpTransport> transport_;  // last: destroyed (and drained) first
};

}  // namespace allot::llm
