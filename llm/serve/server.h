// `allot serve`: an OpenAI-compatible HTTP server (cpp-httplib) for one local model plus LoRA
// adapters, in the request and response shapes vLLM uses:
//
//   POST /v1/completions, /v1/chat/completions   text or token-id prompts, n, sampling, stop,
//                                                logprobs, return_token_ids, SSE streaming
//   GET  /v1/models                              the base model and the loaded adapters
//   POST /tokenize, /detokenize                  vLLM shapes
//   POST /v1/load_lora_adapter, /v1/unload_lora_adapter
//   POST /pooling                                a PRM's P(+) at every step tag (step_pooling.h)
//   GET  /health, /metrics (Prometheus text)
//
// Every error is {"error": {"message", "type", "param", "code"}} with its HTTP status; no
// request can crash the server. Requests are decoded in shared batches by the Engine.
//
// Proof of delivery: /v1/completions answers vLLM's `prompt_logprobs` (the model's own log-probs
// of the prompt tokens, with the requested adapter applied), and every non-streamed completion
// names the adapter that decoded it by the SHA-256 of its adapter_model.safetensors (the file's
// bytes as read by /v1/load_lora_adapter or --adapter): the top-level field "adapter_sha256"
// (null for the base model) and the header x-allot-adapter-sha256 (absent for the base model).
// A learner compares both with what it published (trainer/grpo/delivery_probe.h).
//
// Thread-safe: Stop() may be called from any thread (e.g. a signal watcher).
#pragma once

#include <memory>
#include <string>
#include <thread>

#include "core/status.h"
#include "llm/serve/engine.h"
#include "llm/serve/serve_config.h"
#include "llm/serve/serve_metrics.h"
#include "models/tokenizer/chat_template.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace allot::llm::serve {

inline constexpr const char* kAdapterSha256Header = "x-allot-adapter-sha256";

class Server {
 public:
  // Loads the model, its tokenizer and chat template, and config.adapters ("NAME=DIR").
  static Result<std::unique_ptr<Server>> Create(const ServeConfig& config);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds config.host:config.port (port 0: a free one) and returns the port.
  Result<int> Bind();
  // Serves until Stop(). Call after Bind().
  Status Listen();
  // Bind() + Listen() on a background thread; returns the port once it accepts connections.
  Result<int> Start();
  void Stop();

  std::string url() const;  // "http://127.0.0.1:8000"
  const std::string& served_model_name() const { return served_name_; }
  ServeMetrics& metrics() { return metrics_; }
  Engine& engine() { return *engine_; }

 private:
  Server(ServeConfig config, models::ChatTemplateKind chat_template);
  void Route();
  void HandleGenerate(const httplib::Request& req, httplib::Response& res, bool chat);
  void HandleModels(httplib::Response& res);
  void HandleTokenize(const httplib::Request& req, httplib::Response& res);
  void HandleDetokenize(const httplib::Request& req, httplib::Response& res);
  void HandleLoadLora(const httplib::Request& req, httplib::Response& res);
  void HandleUnloadLora(const httplib::Request& req, httplib::Response& res);

  ServeConfig config_;
  std::string served_name_;
  models::ChatTemplateKind chat_template_;
  ServeMetrics metrics_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<httplib::Server> http_;
  std::thread thread_;
  int port_ = 0;
  int listen_fd_ = -1;  // the socket httplib binds (recorded by its socket-options hook)
};

// Splits "NAME=DIR"; InvalidArgument naming `spec` otherwise.
Result<std::pair<std::string, std::string>> ParseAdapterSpec(const std::string& spec);

}  // namespace allot::llm::serve
