// ScriptedServer: an OpenAI-compatible HTTP/1.1 test server that replies exactly as scripted,
// for tests only. It can delay, drop the connection, return any status (429/500/503 with
// Retry-After), send truncated or malformed bodies, and stream SSE chunks slowly.
//
// One thread per connection (small stacks), keep-alive, loopback only.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace allot::llm::testing {

struct ServerRequest {
  std::string method;
  std::string path;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
};

struct Reply {
  enum class Fault {
    kNone,
    kDrop,       // close the connection without answering
    kTruncate,   // declare a longer Content-Length than sent, then close
    kStream,     // chunked SSE: `chunks`, `chunk_delay_ms` apart
    kStreamCut,  // like kStream but close before the terminating chunk
  };
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::string> headers;  // extra "Name: value"
  int delay_ms = 0;
  Fault fault = Fault::kNone;
  std::vector<std::string> chunks;
  int chunk_delay_ms = 0;

  static Reply Json(std::string body, int status = 200) {
    Reply r;
    r.body = std::move(body);
    r.status = status;
    return r;
  }
};

class ScriptedServer {
 public:
  using Handler = std::function<Reply(const ServerRequest&)>;

  ScriptedServer();
  ~ScriptedServer();
  ScriptedServer(const ScriptedServer&) = delete;
  ScriptedServer& operator=(const ScriptedServer&) = delete;

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }

  // Replies for `path`, used once each in order, before the handler.
  void Script(const std::string& path, std::vector<Reply> replies);
  // Fallback for everything unscripted (default: 404).
  void SetHandler(Handler h);

  std::vector<ServerRequest> requests() const;
  int request_count(const std::string& path) const;
  int max_concurrent() const { return max_active_.load(); }
  int connections() const { return connections_.load(); }

 private:
  void AcceptLoop();
  void Serve(int fd);
  Reply Pick(const ServerRequest& req);
  static void* ThreadMain(void* arg);

  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  unsigned long accept_thread_ = 0;

  mutable std::mutex mu_;
  std::map<std::string, std::deque<Reply>> scripts_;
  Handler handler_;
  std::vector<ServerRequest> log_;
  std::vector<int> conn_fds_;
  std::vector<unsigned long> conn_threads_;

  std::atomic<int> active_{0};
  std::atomic<int> max_active_{0};
  std::atomic<int> connections_{0};
};

// Bodies an OpenAI-compatible server would send.
std::string CompletionBody(const std::string& text, const std::vector<int64_t>& token_ids,
                           int64_t prompt_tokens, const std::string& finish_reason = "stop");
std::string SseEvent(const std::string& data);

}  // namespace allot::llm::testing
