#include "tests/llm/scripted_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

namespace allot::llm::testing {
namespace {

bool SendAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

const char* Reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 404:
      return "Not Found";
    case 429:
      return "Too Many Requests";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "Status";
  }
}

void SleepMs(int ms) {
  if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

struct ThreadArg {
  ScriptedServer* server;
  int fd;  // -1 for the accept loop
  void (*fn)(ScriptedServer*, int);
};

}  // namespace

ScriptedServer::ScriptedServer() {
  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(listen_fd_, 4096) != 0) {
    throw std::runtime_error("scripted server: bind/listen failed");
  }
  socklen_t len = sizeof(addr);
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  handler_ = [](const ServerRequest&) { return Reply::Json(R"({"error":"not found"})", 404); };
  pthread_t t;
  pthread_create(&t, nullptr, &ScriptedServer::ThreadMain, new ThreadArg{this, -1, nullptr});
  accept_thread_ = t;
}

ScriptedServer::~ScriptedServer() {
  stopping_ = true;
  shutdown(listen_fd_, SHUT_RDWR);
  close(listen_fd_);
  pthread_join(static_cast<pthread_t>(accept_thread_), nullptr);
  std::vector<unsigned long> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : conn_fds_) shutdown(fd, SHUT_RDWR);
    threads = conn_threads_;
  }
  for (unsigned long t : threads) pthread_join(static_cast<pthread_t>(t), nullptr);
  for (int fd : conn_fds_) close(fd);
}

void* ScriptedServer::ThreadMain(void* arg) {
  std::unique_ptr<ThreadArg> a(static_cast<ThreadArg*>(arg));
  if (a->fd < 0) {
    a->server->AcceptLoop();
  } else {
    a->server->Serve(a->fd);
  }
  return nullptr;
}

void ScriptedServer::Script(const std::string& path, std::vector<Reply> replies) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& r : replies) scripts_[path].push_back(std::move(r));
}

void ScriptedServer::SetHandler(Handler h) {
  std::lock_guard<std::mutex> lock(mu_);
  handler_ = std::move(h);
}

std::vector<ServerRequest> ScriptedServer::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return log_;
}

int ScriptedServer::request_count(const std::string& path) const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(
      std::count_if(log_.begin(), log_.end(), [&](const auto& r) { return r.path == path; }));
}

void ScriptedServer::AcceptLoop() {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  while (!stopping_) {
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (stopping_) break;
      continue;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    connections_++;
    pthread_t t;
    std::lock_guard<std::mutex> lock(mu_);
    if (pthread_create(&t, &attr, &ScriptedServer::ThreadMain, new ThreadArg{this, fd, nullptr}) !=
        0) {
      close(fd);
      continue;
    }
    conn_fds_.push_back(fd);
    conn_threads_.push_back(t);
  }
  pthread_attr_destroy(&attr);
}

Reply ScriptedServer::Pick(const ServerRequest& req) {
  Handler h;
  {
    std::lock_guard<std::mutex> lock(mu_);
    log_.push_back(req);
    auto it = scripts_.find(req.path);
    if (it != scripts_.end() && !it->second.empty()) {
      Reply r = std::move(it->second.front());
      it->second.pop_front();
      return r;
    }
    h = handler_;
  }
  return h(req);
}

void ScriptedServer::Serve(int fd) {
  std::string buf;
  char tmp[16384];
  while (!stopping_) {
    size_t header_end;
    while ((header_end = buf.find("\r\n\r\n")) == std::string::npos) {
      ssize_t n = recv(fd, tmp, sizeof(tmp), 0);
      if (n <= 0) return;  // fd stays open until the destructor: no reuse races
      buf.append(tmp, static_cast<size_t>(n));
    }
    ServerRequest req;
    std::string head = buf.substr(0, header_end);
    size_t line_end = head.find("\r\n");
    std::string request_line = head.substr(0, line_end);
    size_t sp1 = request_line.find(' ');
    size_t sp2 = request_line.find(' ', sp1 + 1);
    req.method = request_line.substr(0, sp1);
    req.path = request_line.substr(sp1 + 1, sp2 - sp1 - 1);
    size_t pos = line_end == std::string::npos ? head.size() : line_end + 2;
    while (pos < head.size()) {
      size_t e = head.find("\r\n", pos);
      if (e == std::string::npos) e = head.size();
      std::string line = head.substr(pos, e - pos);
      size_t colon = line.find(':');
      if (colon != std::string::npos) {
        std::string name = line.substr(0, colon);
        std::transform(name.begin(), name.end(), name.begin(), ::tolower);
        size_t v = line.find_first_not_of(' ', colon + 1);
        req.headers[name] = v == std::string::npos ? "" : line.substr(v);
      }
      pos = e + 2;
    }
    size_t content_length = 0;
    if (auto it = req.headers.find("content-length"); it != req.headers.end()) {
      content_length = std::stoul(it->second);
    }
    buf.erase(0, header_end + 4);
    while (buf.size() < content_length) {
      ssize_t n = recv(fd, tmp, sizeof(tmp), 0);
      if (n <= 0) return;
      buf.append(tmp, static_cast<size_t>(n));
    }
    req.body = buf.substr(0, content_length);
    buf.erase(0, content_length);

    const int now_active = ++active_;
    int prev = max_active_.load();
    while (now_active > prev && !max_active_.compare_exchange_weak(prev, now_active)) {
    }
    Reply r = Pick(req);
    SleepMs(r.delay_ms);
    --active_;
    using F = Reply::Fault;
    if (r.fault == F::kDrop) {
      shutdown(fd, SHUT_RDWR);
      return;
    }
    std::string out = "HTTP/1.1 " + std::to_string(r.status) + " " + Reason(r.status) + "\r\n";
    out += "Content-Type: " +
           (r.fault == F::kStream || r.fault == F::kStreamCut ? std::string("text/event-stream")
                                                              : r.content_type) +
           "\r\n";
    for (const auto& h : r.headers) out += h + "\r\n";
    if (r.fault == F::kStream || r.fault == F::kStreamCut) {
      out += "Transfer-Encoding: chunked\r\n\r\n";
      if (!SendAll(fd, out)) return;
      for (const auto& c : r.chunks) {
        SleepMs(r.chunk_delay_ms);
        char size[32];
        std::snprintf(size, sizeof(size), "%zx\r\n", c.size());
        if (!SendAll(fd, std::string(size) + c + "\r\n")) return;
      }
      if (r.fault == F::kStreamCut) {
        shutdown(fd, SHUT_RDWR);
        return;
      }
      if (!SendAll(fd, "0\r\n\r\n")) return;
      continue;
    }
    const size_t declared = r.body.size() + (r.fault == F::kTruncate ? 100 : 0);
    out += "Content-Length: " + std::to_string(declared) + "\r\n\r\n" + r.body;
    if (!SendAll(fd, out)) return;
    if (r.fault == F::kTruncate) {
      shutdown(fd, SHUT_RDWR);
      return;
    }
  }
}

std::string CompletionBody(const std::string& text, const std::vector<int64_t>& token_ids,
                           int64_t prompt_tokens, const std::string& finish_reason) {
  nlohmann::json j = {{"id", "cmpl-test"},
                      {"object", "text_completion"},
                      {"model", "test-model"},
                      {"choices",
                       {{{"index", 0},
                         {"text", text},
                         {"finish_reason", finish_reason},
                         {"token_ids", token_ids}}}},
                      {"usage",
                       {{"prompt_tokens", prompt_tokens},
                        {"completion_tokens", token_ids.size()},
                        {"total_tokens", prompt_tokens + static_cast<int64_t>(token_ids.size())}}}};
  return j.dump();
}

std::string SseEvent(const std::string& data) { return "data: " + data + "\n\n"; }

}  // namespace allot::llm::testing
