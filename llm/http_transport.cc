#include "llm/http_transport.h"

#include <curl/curl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <queue>
#include <thread>
#include <unordered_set>

namespace allot::llm {
namespace {

using Clock = std::chrono::steady_clock;

struct CurlGlobal {
  CurlGlobal() { curl_global_init(CURL_GLOBAL_DEFAULT); }
};

const char* MethodName(HttpRequest::Method m) {
  return m == HttpRequest::Method::kPost ? "POST" : "GET";
}

bool StartsWithNoCase(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  }
  return true;
}

}  // namespace

class HttpTransport::Loop {
 public:
  Loop(HttpTransport* owner, const Options& options) : owner_(owner), options_(options) {}
  ~Loop();

  Status Init();
  // Queues `fn` for the loop thread. False once the loop has closed.
  bool Post(std::function<void()> fn);
  void Stop();
  bool OnThisThread() const { return tls_loop_ == this; }
  // Loop thread only.
  void StartTransfer(HttpRequest request, Done done);
  void AddTimer(Clock::time_point at, std::function<void()> fn);

 private:
  struct Transfer {
    Loop* loop = nullptr;
    CURL* easy = nullptr;
    HttpRequest req;
    Done done;
    curl_slist* headers = nullptr;
    HttpResponse resp;
    bool too_large = false;
    bool aborted = false;
    char error[CURL_ERROR_SIZE] = {0};
  };
  struct Timer {
    Clock::time_point at;
    uint64_t seq;
    std::function<void()> fn;
    bool operator>(const Timer& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };

  void Run();
  void DrainQueue();
  void RunDueTimers(bool all);
  void ReapFinished();
  void Finish(Transfer* t, CURLcode rc);
  int TimeoutMs() const;
  void CancelAll();

  static int OnSocket(CURL* easy, curl_socket_t s, int what, void* userp, void* socketp);
  static int OnCurlTimer(CURLM* multi, long timeout_ms, void* userp);
  static size_t OnWrite(char* ptr, size_t size, size_t nmemb, void* userdata);
  static size_t OnHeader(char* ptr, size_t size, size_t nmemb, void* userdata);

  static thread_local Loop* tls_loop_;

  HttpTransport* owner_;
  Options options_;
  int epfd_ = -1;
  int evfd_ = -1;
  CURLM* multi_ = nullptr;
  std::thread thread_;

  std::mutex mu_;
  std::vector<std::function<void()>> queue_;  // guarded by mu_
  bool wake_pending_ = false;                 // guarded by mu_
  bool stop_ = false;                         // guarded by mu_
  bool closed_ = false;                       // guarded by mu_

  // Loop-thread state.
  bool stopping_ = false;
  Clock::time_point curl_deadline_ = Clock::time_point::max();
  std::priority_queue<Timer, std::vector<Timer>, std::greater<Timer>> timers_;
  uint64_t timer_seq_ = 0;
  std::unordered_set<Transfer*> active_;
  std::vector<CURL*> idle_easies_;
};

thread_local HttpTransport::Loop* HttpTransport::Loop::tls_loop_ = nullptr;

HttpTransport::Loop::~Loop() {
  Stop();
  for (CURL* e : idle_easies_) curl_easy_cleanup(e);
  if (multi_ != nullptr) curl_multi_cleanup(multi_);
  if (evfd_ >= 0) close(evfd_);
  if (epfd_ >= 0) close(epfd_);
}

Status HttpTransport::Loop::Init() {
  epfd_ = epoll_create1(EPOLL_CLOEXEC);
  evfd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epfd_ < 0 || evfd_ < 0) return Internal(std::string("http loop: ") + std::strerror(errno));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = evfd_;
  if (epoll_ctl(epfd_, EPOLL_CTL_ADD, evfd_, &ev) != 0) {
    return Internal(std::string("http loop: epoll_ctl: ") + std::strerror(errno));
  }
  multi_ = curl_multi_init();
  if (multi_ == nullptr) return Internal("http loop: curl_multi_init failed");
  curl_multi_setopt(multi_, CURLMOPT_SOCKETFUNCTION, &Loop::OnSocket);
  curl_multi_setopt(multi_, CURLMOPT_SOCKETDATA, this);
  curl_multi_setopt(multi_, CURLMOPT_TIMERFUNCTION, &Loop::OnCurlTimer);
  curl_multi_setopt(multi_, CURLMOPT_TIMERDATA, this);
  curl_multi_setopt(multi_, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
  if (options_.max_connections_per_host > 0) {
    curl_multi_setopt(multi_, CURLMOPT_MAX_HOST_CONNECTIONS, options_.max_connections_per_host);
  }
  // Keep idle connections around for reuse; the default (4x handles) shrinks under bursts.
  curl_multi_setopt(multi_, CURLMOPT_MAXCONNECTS, 4096L);
  thread_ = std::thread([this] { Run(); });
  return Status::Ok();
}

bool HttpTransport::Loop::Post(std::function<void()> fn) {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return false;
    queue_.push_back(std::move(fn));
    if (!wake_pending_) wake = wake_pending_ = true;
  }
  if (wake) {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(evfd_, &one, sizeof(one));
  }
  return true;
}

void HttpTransport::Loop::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) {
      // Already stopping; just wait below.
    }
    stop_ = true;
  }
  uint64_t one = 1;
  if (evfd_ >= 0) [[maybe_unused]]
    ssize_t n = write(evfd_, &one, sizeof(one));
  if (thread_.joinable() && !OnThisThread()) thread_.join();
}

void HttpTransport::Loop::AddTimer(Clock::time_point at, std::function<void()> fn) {
  if (stopping_) {
    fn();
    return;
  }
  timers_.push(Timer{at, timer_seq_++, std::move(fn)});
}

void HttpTransport::Loop::StartTransfer(HttpRequest request, Done done) {
  if (stopping_) {
    HttpResponse r;
    r.status = Cancelled(std::string(MethodName(request.method)) + " " + request.url +
                         ": http transport shut down");
    done(std::move(r));
    return;
  }
  auto* t = new Transfer;
  t->loop = this;
  t->req = std::move(request);
  t->done = std::move(done);
  if (!idle_easies_.empty()) {
    t->easy = idle_easies_.back();
    idle_easies_.pop_back();
    curl_easy_reset(t->easy);
  } else {
    t->easy = curl_easy_init();
  }
  CURL* e = t->easy;
  if (e == nullptr) {
    t->resp.status = Internal("curl_easy_init failed");
    t->done(std::move(t->resp));
    delete t;
    return;
  }
  curl_easy_setopt(e, CURLOPT_URL, t->req.url.c_str());
  curl_easy_setopt(e, CURLOPT_PRIVATE, t);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t->error);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &Loop::OnWrite);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, t);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &Loop::OnHeader);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, t);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS,
                   static_cast<long>(std::max<int64_t>(1, t->req.timeout.count())));
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(std::max<int64_t>(1, t->req.connect_timeout.count())));
  // HTTP/2 when a TLS server offers it through ALPN; HTTP/1.1 keep-alive otherwise.
  curl_easy_setopt(e, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_2TLS));
  curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
  // Certificates are always verified; a private CA is added with ca_file, never by turning
  // verification off.
  if (!t->req.ca_file.empty()) curl_easy_setopt(e, CURLOPT_CAINFO, t->req.ca_file.c_str());
  if (t->req.method == HttpRequest::Method::kPost) {
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, t->req.body.data());
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(t->req.body.size()));
  }
  t->headers = curl_slist_append(t->headers, "Expect:");
  for (const std::string& h : t->req.headers) t->headers = curl_slist_append(t->headers, h.c_str());
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, t->headers);
  active_.insert(t);
  CURLMcode mc = curl_multi_add_handle(multi_, e);
  if (mc != CURLM_OK) {
    active_.erase(t);
    t->resp.status = Internal(std::string("curl_multi_add_handle: ") + curl_multi_strerror(mc));
    curl_slist_free_all(t->headers);
    curl_easy_cleanup(e);
    t->done(std::move(t->resp));
    delete t;
  }
}

size_t HttpTransport::Loop::OnWrite(char* ptr, size_t size, size_t nmemb, void* userdata) {
  auto* t = static_cast<Transfer*>(userdata);
  const size_t len = size * nmemb;
  if (t->req.on_data) {
    if (t->resp.http_status == 0)
      curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &t->resp.http_status);
    if (t->resp.http_status >= 200 && t->resp.http_status < 300) {
      if (!t->req.on_data(std::string_view(ptr, len))) {
        t->aborted = true;
        return 0;
      }
      return len;
    }
  }
  if (static_cast<int64_t>(t->resp.body.size() + len) > t->req.max_response_bytes) {
    t->too_large = true;
    return 0;
  }
  t->resp.body.append(ptr, len);
  return len;
}

size_t HttpTransport::Loop::OnHeader(char* ptr, size_t size, size_t nmemb, void* userdata) {
  auto* t = static_cast<Transfer*>(userdata);
  const size_t len = size * nmemb;
  std::string_view line(ptr, len);
  if (StartsWithNoCase(line, "http/")) {
    t->resp.retry_after_s = -1;  // a new response (after 100-continue or a redirect)
    t->resp.http_status = 0;
  } else if (StartsWithNoCase(line, "retry-after:")) {
    std::string v(line.substr(12));
    char* end = nullptr;
    double s = std::strtod(v.c_str(), &end);
    if (end != v.c_str() && s >= 0) t->resp.retry_after_s = s;  // an HTTP-date is ignored
  }
  return len;
}

int HttpTransport::Loop::OnSocket(CURL*, curl_socket_t s, int what, void* userp, void* socketp) {
  auto* loop = static_cast<Loop*>(userp);
  if (what == CURL_POLL_REMOVE) {
    epoll_ctl(loop->epfd_, EPOLL_CTL_DEL, s, nullptr);
    curl_multi_assign(loop->multi_, s, nullptr);
    return 0;
  }
  epoll_event ev{};
  ev.data.fd = s;
  if (what & CURL_POLL_IN) ev.events |= EPOLLIN;
  if (what & CURL_POLL_OUT) ev.events |= EPOLLOUT;
  if (socketp == nullptr) {
    if (epoll_ctl(loop->epfd_, EPOLL_CTL_ADD, s, &ev) != 0 && errno == EEXIST) {
      epoll_ctl(loop->epfd_, EPOLL_CTL_MOD, s, &ev);
    }
    curl_multi_assign(loop->multi_, s, loop);
  } else if (epoll_ctl(loop->epfd_, EPOLL_CTL_MOD, s, &ev) != 0 && errno == ENOENT) {
    epoll_ctl(loop->epfd_, EPOLL_CTL_ADD, s, &ev);
  }
  return 0;
}

int HttpTransport::Loop::OnCurlTimer(CURLM*, long timeout_ms, void* userp) {
  auto* loop = static_cast<Loop*>(userp);
  loop->curl_deadline_ = timeout_ms < 0 ? Clock::time_point::max()
                                        : Clock::now() + std::chrono::milliseconds(timeout_ms);
  return 0;
}

int HttpTransport::Loop::TimeoutMs() const {
  Clock::time_point next = curl_deadline_;
  if (!timers_.empty()) next = std::min(next, timers_.top().at);
  if (next == Clock::time_point::max()) return 1000;
  auto now = Clock::now();
  if (next <= now) return 0;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count() + 1;
  return static_cast<int>(std::min<int64_t>(ms, 1000));
}

void HttpTransport::Loop::DrainQueue() {
  std::vector<std::function<void()>> batch;
  {
    std::lock_guard<std::mutex> lock(mu_);
    batch.swap(queue_);
    wake_pending_ = false;
    if (stop_) stopping_ = true;
  }
  for (auto& fn : batch) fn();
}

void HttpTransport::Loop::RunDueTimers(bool all) {
  const auto now = Clock::now();
  while (!timers_.empty() && (all || timers_.top().at <= now)) {
    auto fn = std::move(const_cast<Timer&>(timers_.top()).fn);
    timers_.pop();
    fn();
  }
}

void HttpTransport::Loop::Finish(Transfer* t, CURLcode rc) {
  curl_multi_remove_handle(multi_, t->easy);
  active_.erase(t);
  if (t->resp.http_status == 0)
    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &t->resp.http_status);
  const std::string where = std::string(MethodName(t->req.method)) + " " + t->req.url;
  if (rc == CURLE_OK) {
    t->resp.status = Status::Ok();
  } else if (t->too_large) {
    t->resp.status = ResourceExhausted(where + ": response body exceeds the limit of " +
                                       std::to_string(t->req.max_response_bytes) + " bytes");
  } else if (t->aborted) {
    t->resp.status = Cancelled(where + ": aborted by the stream consumer");
  } else {
    std::string detail = t->error[0] != '\0' ? t->error : curl_easy_strerror(rc);
    std::string msg = where + ": " + detail;
    switch (rc) {
      case CURLE_OPERATION_TIMEDOUT:
        t->resp.status = DeadlineExceeded(msg);
        break;
      case CURLE_COULDNT_RESOLVE_HOST:
      case CURLE_COULDNT_RESOLVE_PROXY:
      case CURLE_COULDNT_CONNECT:
      case CURLE_SEND_ERROR:
      case CURLE_RECV_ERROR:
      case CURLE_GOT_NOTHING:
      case CURLE_PARTIAL_FILE:
      case CURLE_SSL_CONNECT_ERROR:
      case CURLE_HTTP2:
      case CURLE_HTTP2_STREAM:
        t->resp.status = Unavailable(msg);
        break;
      case CURLE_URL_MALFORMAT:
      case CURLE_UNSUPPORTED_PROTOCOL:
        t->resp.status = InvalidArgument(msg);
        break;
      case CURLE_PEER_FAILED_VERIFICATION:
        t->resp.status = PermissionDenied(msg);
        break;
      default:
        t->resp.status = Unavailable(msg);
    }
  }
  curl_slist_free_all(t->headers);
  if (idle_easies_.size() < 1024) {
    idle_easies_.push_back(t->easy);
  } else {
    curl_easy_cleanup(t->easy);
  }
  Done done = std::move(t->done);
  HttpResponse resp = std::move(t->resp);
  delete t;
  done(std::move(resp));
}

void HttpTransport::Loop::ReapFinished() {
  int left = 0;
  while (CURLMsg* msg = curl_multi_info_read(multi_, &left)) {
    if (msg->msg != CURLMSG_DONE) continue;
    Transfer* t = nullptr;
    curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, reinterpret_cast<char**>(&t));
    Finish(t, msg->data.result);
  }
}

void HttpTransport::Loop::CancelAll() {
  std::vector<Transfer*> all(active_.begin(), active_.end());
  for (Transfer* t : all) {
    curl_multi_remove_handle(multi_, t->easy);
    active_.erase(t);
    curl_slist_free_all(t->headers);
    curl_easy_cleanup(t->easy);
    t->resp.status = Cancelled(std::string(MethodName(t->req.method)) + " " + t->req.url +
                               ": http transport shut down");
    Done done = std::move(t->done);
    HttpResponse resp = std::move(t->resp);
    delete t;
    done(std::move(resp));
  }
}

void HttpTransport::Loop::Run() {
  tls_loop_ = this;
  std::vector<epoll_event> events(256);
  int running = 0;
  while (!stopping_) {
    const int n = epoll_wait(epfd_, events.data(), static_cast<int>(events.size()), TimeoutMs());
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == evfd_) {
        uint64_t v;
        [[maybe_unused]] ssize_t r = read(evfd_, &v, sizeof(v));
        continue;
      }
      int flags = 0;
      if (events[i].events & EPOLLIN) flags |= CURL_CSELECT_IN;
      if (events[i].events & EPOLLOUT) flags |= CURL_CSELECT_OUT;
      if (events[i].events & (EPOLLERR | EPOLLHUP)) flags |= CURL_CSELECT_ERR;
      curl_multi_socket_action(multi_, fd, flags, &running);
    }
    ReapFinished();
    DrainQueue();
    if (curl_deadline_ <= Clock::now()) {
      curl_deadline_ = Clock::time_point::max();
      curl_multi_socket_action(multi_, CURL_SOCKET_TIMEOUT, 0, &running);
      ReapFinished();
    }
    RunDueTimers(false);
  }
  // Shutdown: fail transfers in flight, then run whatever was queued or scheduled until quiet.
  CancelAll();
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (queue_.empty() && timers_.empty()) {
        closed_ = true;
        break;
      }
    }
    DrainQueue();
    RunDueTimers(true);
  }
  tls_loop_ = nullptr;
}

// --- HttpTransport ----------------------------------------------------------------------------

Result<std::unique_ptr<HttpTransport>> HttpTransport::Create(const Options& options) {
  static CurlGlobal global;
  if (options.threads < 1) return InvalidArgument("http transport: threads must be >= 1");
  std::unique_ptr<HttpTransport> t(new HttpTransport());
  for (int i = 0; i < options.threads; ++i) {
    auto loop = std::make_unique<Loop>(t.get(), options);
    ALLOT_RETURN_IF_ERROR(loop->Init());
    t->loops_.push_back(std::move(loop));
  }
  return t;
}

HttpTransport::~HttpTransport() { Shutdown(); }

void HttpTransport::Shutdown() {
  for (auto& loop : loops_) loop->Stop();
}

HttpTransport::Loop& HttpTransport::PickLoop() {
  for (auto& loop : loops_) {
    if (loop->OnThisThread()) return *loop;
  }
  return *loops_[next_.fetch_add(1, std::memory_order_relaxed) % loops_.size()];
}

void HttpTransport::Send(HttpRequest request, Done done) {
  Loop& loop = PickLoop();
  if (loop.OnThisThread()) {
    loop.StartTransfer(std::move(request), std::move(done));
    return;
  }
  auto shared = std::make_shared<std::pair<HttpRequest, Done>>(std::move(request), std::move(done));
  if (!loop.Post([&loop, shared] {
        loop.StartTransfer(std::move(shared->first), std::move(shared->second));
      })) {
    HttpResponse r;
    r.status = Cancelled(shared->first.url + ": http transport shut down");
    shared->second(std::move(r));
  }
}

void HttpTransport::RunAfter(std::chrono::steady_clock::duration delay, std::function<void()> fn) {
  Loop& loop = PickLoop();
  const auto at = Clock::now() + delay;
  if (loop.OnThisThread()) {
    loop.AddTimer(at, std::move(fn));
    return;
  }
  auto shared = std::make_shared<std::function<void()>>(std::move(fn));
  if (!loop.Post([&loop, at, shared] { loop.AddTimer(at, std::move(*shared)); })) (*shared)();
}

}  // namespace allot::llm
