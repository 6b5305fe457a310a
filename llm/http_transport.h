// HttpTransport: asynchronous HTTP on libcurl's multi socket interface.
//
// A few event-loop threads (epoll + curl_multi_socket_action) carry any number of transfers;
// there is never a thread per request. Each loop owns one multi handle, so connections (HTTP/1.1
// keep-alive, or multiplexed HTTP/2 where the server offers it over TLS) are reused within a
// loop. Completion callbacks and timers run on the loop threads and must not block.
//
// Thread-safe: Send() and RunAfter() may be called from any thread, including loop threads.
// Destroying the transport completes every pending transfer with kCancelled and runs every
// pending timer at once.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace allot::llm {

struct HttpRequest {
  enum class Method { kGet, kPost };
  Method method = Method::kGet;
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  std::string body;                  // POST body (JSON)
  std::chrono::milliseconds timeout{120000};
  std::chrono::milliseconds connect_timeout{10000};
  int64_t max_response_bytes = 64ll << 20;
  std::string ca_file;  // PEM CAs verifying an https server; empty = the system store
  // Streaming: called on the loop thread with each piece of a 2xx body as it arrives (the body
  // is then not buffered). Returning false aborts the transfer with kCancelled.
  std::function<bool(std::string_view)> on_data;
};

struct HttpResponse {
  Status status;  // transport outcome: OK once an HTTP status line was received
  long http_status = 0;
  std::string body;           // buffered body (error bodies are always buffered)
  double retry_after_s = -1;  // from a Retry-After header in seconds; -1 when absent
};

class HttpTransport {
 public:
  struct Options {
    int threads = 1;
    long max_connections_per_host = 0;  // 0 = no limit beyond what callers impose
  };
  using Done = std::function<void(HttpResponse&&)>;

  static Result<std::unique_ptr<HttpTransport>> Create(const Options& options);
  ~HttpTransport();
  HttpTransport(const HttpTransport&) = delete;
  HttpTransport& operator=(const HttpTransport&) = delete;

  // Starts a transfer; `done` runs exactly once on a loop thread (or inline after shutdown).
  void Send(HttpRequest request, Done done);
  // Runs `fn` on a loop thread after `delay` (inline at once after shutdown).
  void RunAfter(std::chrono::steady_clock::duration delay, std::function<void()> fn);
  // Stops the loops; idempotent.
  void Shutdown();

  class Loop;

 private:
  HttpTransport() = default;
  Loop& PickLoop();

  std::vector<std::unique_ptr<Loop>> loops_;
  std::atomic<uint64_t> next_{0};
};

}  // namespace allot::llm
