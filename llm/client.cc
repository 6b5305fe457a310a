#include "llm/client.h"

#include <chrono>
#include <deque>
#include <mutex>
#include <random>

#include <nlohmann/json.hpp>

#include "llm/circuit_breaker.h"
#include "llm/http_transport.h"
#include "llm/openai_json.h"
#include "llm/rate_limiter.h"

namespace allot::llm {
namespace {

using Clock = std::chrono::steady_clock;

std::chrono::milliseconds Ms(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000.0));
}

// Full-jitter-in-the-upper-half exponential backoff: initial * 2^retry, capped, times U(0.5, 1).
double BackoffSeconds(int retry, double initial, double cap) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  double d = initial;
  for (int i = 0; i < retry && d < cap; ++i) d *= 2.0;
  d = std::min(d, cap);
  return d * std::uniform_real_distribution<double>(0.5, 1.0)(rng);
}

std::string Snippet(const std::string& body) {
  std::string s = body.substr(0, 200);
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return body.size() > 200 ? s + "..." : s;
}

std::string NormalizeBase(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  if (url.size() >= 3 && url.compare(url.size() - 3, 3, "/v1") == 0) url.resize(url.size() - 3);
  return url;
}

}  // namespace

struct Client::Endpoint {
  explicit Endpoint(EndpointConfig c)
      : cfg(std::move(c)),
        base(NormalizeBase(cfg.base_url)),
        bucket(cfg.limits.requests_per_s, cfg.limits.burst),
        breaker(cfg.limits.breaker_failures,
                std::chrono::duration_cast<Clock::duration>(
                    std::chrono::duration<double>(cfg.limits.breaker_cooldown_s))) {
    if (!cfg.api_key.empty()) auth = "Authorization: Bearer " + cfg.api_key;
  }

  EndpointConfig cfg;
  std::string base;
  std::string auth;

  std::mutex mu;
  int in_flight = 0;                                 // guarded by mu
  std::deque<std::shared_ptr<CallState>> waiting;    // guarded by mu
  std::vector<std::shared_ptr<CallState>> on_probe;  // guarded by mu
  bool probing = false;                              // guarded by mu
  TokenBucket bucket;                                // guarded by mu
  CircuitBreaker breaker;                            // guarded by mu
};

struct Client::CallState {
  Endpoint* ep = nullptr;
  bool post = false;
  std::string url;
  std::string where;  // "llm endpoint 'name' (POST http://...)"
  std::string body;
  bool stream = false;
  Clock::time_point start;
  Clock::time_point deadline;
  int attempts = 0;
  std::function<bool(std::string_view)> on_data;
  std::function<bool()> may_retry;  // streams: only before the first chunk
  std::function<void(Status, HttpResponse&&, int attempts, double latency_s)> done;
};

Result<std::unique_ptr<Client>> Client::Create(std::vector<EndpointConfig> endpoints,
                                               const ClientOptions& options) {
  std::unique_ptr<Client> c(new Client());
  c->options_ = options;
  for (auto& e : endpoints) {
    ALLOT_RETURN_IF_ERROR(ResolveApiKey(e));
    ALLOT_RETURN_IF_ERROR(e.Validate());
    if (c->Find(e.name) != nullptr) {
      return InvalidArgument("endpoints: duplicate endpoint name '" + e.name + "'");
    }
    c->endpoints_.push_back(std::make_unique<Endpoint>(std::move(e)));
  }
  HttpTransport::Options topt;
  topt.threads = options.threads;
  ALLOT_ASSIGN_OR_RETURN(c->transport_, HttpTransport::Create(topt));
  return c;
}

Client::~Client() {
  if (transport_) transport_->Shutdown();
}

Client::Endpoint* Client::Find(std::string_view name) const {
  for (const auto& e : endpoints_) {
    if (e->cfg.name == name) return e.get();
  }
  return nullptr;
}

const EndpointConfig* Client::endpoint(std::string_view name) const {
  Endpoint* e = Find(name);
  return e != nullptr ? &e->cfg : nullptr;
}

std::vector<std::string> Client::endpoint_names() const {
  std::vector<std::string> names;
  for (const auto& e : endpoints_) names.push_back(e->cfg.name);
  return names;
}

EndpointStats Client::stats(std::string_view name) const {
  EndpointStats s;
  Endpoint* e = Find(name);
  if (e == nullptr) return s;
  std::lock_guard<std::mutex> lock(e->mu);
  s.in_flight = e->in_flight;
  s.queued = static_cast<int>(e->waiting.size());
  s.breaker_open = e->breaker.is_open();
  s.breaker_opened = e->breaker.times_opened();
  return s;
}

Status Client::NotConfigured(std::string_view name) const {
  std::string known;
  for (const auto& e : endpoints_) known += (known.empty() ? "" : ", ") + e->cfg.name;
  return NotFound("llm endpoint '" + std::string(name) +
                  "' is not configured (known: " + (known.empty() ? "none" : known) + ")");
}

// --- The call pipeline: admit (breaker, concurrency) -> launch (rate) -> attempt -> response.

void Client::Admit(std::shared_ptr<CallState> st) {
  Endpoint& ep = *st->ep;
  bool probe = false;
  {
    std::unique_lock<std::mutex> lock(ep.mu);
    switch (ep.breaker.Check(Clock::now())) {
      case CircuitBreaker::Gate::kAllow:
        break;
      case CircuitBreaker::Gate::kReject: {
        const int failures = ep.breaker.consecutive_failures();
        lock.unlock();
        Finish(st,
               Unavailable(st->where + ": circuit breaker open after " + std::to_string(failures) +
                           " consecutive failures"),
               HttpResponse());
        return;
      }
      case CircuitBreaker::Gate::kProbe:
        ep.on_probe.push_back(std::move(st));
        probe = !ep.probing;
        ep.probing = true;
        break;
    }
    if (!probe && st) {
      if (ep.in_flight >= ep.cfg.limits.max_concurrency) {
        ep.waiting.push_back(std::move(st));
        return;
      }
      ++ep.in_flight;
    }
  }
  if (probe) {
    Probe(&ep);
    return;
  }
  if (st) Launch(std::move(st));
}

void Client::Launch(std::shared_ptr<CallState> st) {
  Clock::duration wait;
  {
    std::lock_guard<std::mutex> lock(st->ep->mu);
    wait = st->ep->bucket.Reserve(Clock::now());
  }
  if (wait > Clock::duration::zero()) {
    transport_->RunAfter(wait, [this, st] { Attempt(st); });
  } else {
    Attempt(std::move(st));
  }
}

void Client::Attempt(std::shared_ptr<CallState> st) {
  Endpoint& ep = *st->ep;
  const auto now = Clock::now();
  if (now >= st->deadline) {
    Release(ep);
    Finish(st,
           DeadlineExceeded(st->where + ": deadline passed after " + std::to_string(st->attempts) +
                            " attempt(s)"),
           HttpResponse());
    return;
  }
  bool open;
  {
    std::lock_guard<std::mutex> lock(ep.mu);
    open = ep.breaker.is_open();
  }
  if (open) {
    Release(ep);
    Finish(st, Unavailable(st->where + ": circuit breaker open"), HttpResponse());
    return;
  }
  HttpRequest req;
  req.method = st->post ? HttpRequest::Method::kPost : HttpRequest::Method::kGet;
  req.url = st->url;
  req.body = st->body;
  req.headers.push_back(st->stream ? "Accept: text/event-stream" : "Accept: application/json");
  if (st->post) req.headers.push_back("Content-Type: application/json");
  if (!ep.auth.empty()) req.headers.push_back(ep.auth);
  const auto remaining = std::chrono::duration_cast<std::chrono::milliseconds>(st->deadline - now);
  req.timeout = std::min(Ms(ep.cfg.limits.timeout_s), remaining);
  req.connect_timeout = std::min(Ms(ep.cfg.limits.connect_timeout_s), remaining);
  req.ca_file = ep.cfg.ca_file;
  req.max_response_bytes = ep.cfg.limits.max_response_bytes;
  req.on_data = st->on_data;
  ++st->attempts;
  transport_->Send(std::move(req), [this, st](HttpResponse&& r) { OnResponse(st, std::move(r)); });
}

void Client::OnResponse(std::shared_ptr<CallState> st, HttpResponse&& r) {
  Endpoint& ep = *st->ep;
  const auto& lim = ep.cfg.limits;
  Status s;
  bool retryable = false;
  bool counts_as_failure = false;  // for the breaker: the server looks broken or unreachable
  if (!r.status.ok()) {
    const StatusCode c = r.status.code();
    retryable = c == StatusCode::kUnavailable || c == StatusCode::kDeadlineExceeded;
    counts_as_failure = retryable;
    s = Status(c, "llm endpoint '" + ep.cfg.name + "': " + r.status.message());
  } else if (r.http_status >= 200 && r.http_status < 300) {
    {
      std::lock_guard<std::mutex> lock(ep.mu);
      ep.breaker.RecordSuccess();
    }
    Release(ep);
    Finish(st, Status::Ok(), std::move(r));
    return;
  } else {
    const std::string msg =
        st->where + ": HTTP " + std::to_string(r.http_status) + ": " + Snippet(r.body);
    if (r.http_status == 429) {
      s = ResourceExhausted(msg);
      retryable = true;
    } else if (r.http_status >= 500) {
      s = Unavailable(msg);
      retryable = counts_as_failure = true;
    } else if (r.http_status == 401 || r.http_status == 403) {
      s = PermissionDenied(msg);
    } else if (r.http_status == 404) {
      s = NotFound(msg);
    } else if (r.http_status == 413) {
      s = ResourceExhausted(msg);
    } else {
      s = InvalidArgument(msg);
    }
  }
  const auto now = Clock::now();
  bool open = false;
  {
    std::lock_guard<std::mutex> lock(ep.mu);
    if (counts_as_failure) {
      ep.breaker.RecordFailure(now);
    } else if (r.status.ok() && r.http_status != 429) {
      ep.breaker.RecordSuccess();  // a 4xx: the server is up and answering
    }
    open = ep.breaker.is_open();
  }
  if (retryable && st->may_retry && !st->may_retry()) retryable = false;
  if (retryable && open) {
    s = s.Annotate("circuit breaker opened; not retrying");
    retryable = false;
  }
  if (retryable && st->attempts >= lim.max_attempts) {
    s = s.Annotate("gave up after " + std::to_string(st->attempts) + " attempts");
    retryable = false;
  }
  if (retryable) {
    double delay = BackoffSeconds(st->attempts - 1, lim.backoff_initial_s, lim.backoff_max_s);
    if (r.http_status == 429 && r.retry_after_s >= 0) {
      if (r.retry_after_s > lim.max_retry_after_s) {
        s = s.Annotate("Retry-After " + std::to_string(r.retry_after_s) + " s exceeds " +
                       std::to_string(lim.max_retry_after_s) + " s");
        retryable = false;
      }
      delay = r.retry_after_s;
    }
    if (retryable && now + Ms(delay) >= st->deadline) {
      s = s.Annotate("deadline leaves no time to retry after " + std::to_string(st->attempts) +
                     " attempt(s)");
      retryable = false;
    }
    if (retryable) {
      transport_->RunAfter(Ms(delay), [this, st] { Attempt(st); });
      return;
    }
  }
  Release(ep);
  Finish(st, std::move(s), std::move(r));
}

void Client::Release(Endpoint& ep) {
  std::shared_ptr<CallState> next;
  {
    std::lock_guard<std::mutex> lock(ep.mu);
    if (!ep.waiting.empty()) {
      next = std::move(ep.waiting.front());  // the slot passes straight to the next caller
      ep.waiting.pop_front();
    } else {
      --ep.in_flight;
    }
  }
  if (next) Launch(std::move(next));
}

void Client::Finish(std::shared_ptr<CallState> st, Status s, HttpResponse&& r) {
  const double latency = std::chrono::duration<double>(Clock::now() - st->start).count();
  auto done = std::move(st->done);
  done(std::move(s), std::move(r), st->attempts, latency);
}

void Client::Probe(Endpoint* ep) {
  HttpRequest req;
  req.url = ep->base + "/health";
  req.timeout = Ms(std::min(ep->cfg.limits.timeout_s, 10.0));
  req.connect_timeout = Ms(ep->cfg.limits.connect_timeout_s);
  req.ca_file = ep->cfg.ca_file;
  if (!ep->auth.empty()) req.headers.push_back(ep->auth);
  transport_->Send(std::move(req), [this, ep](HttpResponse&& r) {
    const bool healthy = r.status.ok() && r.http_status >= 200 && r.http_status < 300;
    std::vector<std::shared_ptr<CallState>> waiters;
    {
      std::lock_guard<std::mutex> lock(ep->mu);
      if (healthy) {
        ep->breaker.RecordSuccess();
      } else {
        ep->breaker.ProbeFailed(Clock::now());
      }
      ep->probing = false;
      waiters.swap(ep->on_probe);
    }
    for (auto& st : waiters) {
      if (healthy) {
        Admit(std::move(st));
      } else {
        const std::string why =
            r.status.ok() ? "HTTP " + std::to_string(r.http_status) : r.status.message();
        Finish(st, Unavailable(st->where + ": circuit breaker open; /health probe failed: " + why),
               HttpResponse());
      }
    }
  });
}

// --- Completions ------------------------------------------------------------------------------

namespace {

// Accumulates a streamed completion and forwards each chunk.
struct StreamState {
  SseParser parser;
  Completion completion;
  Status error;
  bool saw_done = false;
  bool started = false;
  bool has_usage = false;
  std::function<void(const StreamChunk&)> on_chunk;
};

void Accumulate(Completion& c, const StreamChunk& chunk) {
  if (chunk.index < 0 || chunk.index > 4096) return;
  if (static_cast<size_t>(chunk.index) >= c.choices.size()) c.choices.resize(chunk.index + 1);
  Choice& ch = c.choices[chunk.index];
  ch.index = chunk.index;
  ch.text += chunk.text;
  ch.token_ids.insert(ch.token_ids.end(), chunk.token_ids.begin(), chunk.token_ids.end());
  ch.logprobs.insert(ch.logprobs.end(), chunk.logprobs.begin(), chunk.logprobs.end());
  if (!chunk.finish_reason.empty()) ch.finish_reason = chunk.finish_reason;
}

void FillUsageFallback(Completion& c) {
  // Servers that omit usage: count what the response itself shows.
  if (c.usage.completion_tokens == 0) {
    for (const auto& ch : c.choices) {
      c.usage.completion_tokens +=
          static_cast<int64_t>(!ch.token_ids.empty() ? ch.token_ids.size() : ch.logprobs.size());
    }
  }
  if (c.usage.prompt_tokens == 0) {
    c.usage.prompt_tokens =
        static_cast<int64_t>(!c.prompt_token_ids.empty()
                                 ? c.prompt_token_ids.size()
                                 : (c.choices.empty() ? 0 : c.choices[0].prompt_token_ids.size()));
  }
}

}  // namespace

void Client::RunCompletion(Endpoint* ep, const char* path, std::string body, bool chat,
                           Callback<Completion> done, const CallOptions& options) {
  auto st = std::make_shared<CallState>();
  st->ep = ep;
  st->post = true;
  st->url = ep->base + path;
  st->where = "llm endpoint '" + ep->cfg.name + "' (POST " + st->url + ")";
  st->body = std::move(body);
  st->start = Clock::now();
  st->deadline =
      st->start + Ms(options.deadline_s > 0 ? options.deadline_s : ep->cfg.limits.deadline_s);
  std::shared_ptr<StreamState> stream;
  if (options.on_chunk) {
    stream = std::make_shared<StreamState>();
    stream->on_chunk = options.on_chunk;
    stream->parser.max_event_bytes = static_cast<size_t>(ep->cfg.limits.max_response_bytes);
    st->stream = true;
    const std::string* where = &st->where;
    st->on_data = [stream, chat, where](std::string_view bytes) {
      return stream->parser.Feed(bytes, [&](std::string_view data) {
        if (data == "[DONE]") {
          stream->saw_done = true;
          return true;
        }
        std::vector<StreamChunk> chunks;
        Status s = ParseStreamChunk(data, chat, *where, &chunks, &stream->completion.usage,
                                    &stream->has_usage);
        if (!s.ok()) {
          stream->error = std::move(s);
          return false;
        }
        for (const auto& chunk : chunks) {
          stream->started = true;
          Accumulate(stream->completion, chunk);
          stream->on_chunk(chunk);
        }
        return true;
      });
    };
    st->may_retry = [stream] { return !stream->started; };
  }
  const GpuProfile gpu = options_.gpu;
  st->done = [this, ep, chat, stream, gpu, done = std::move(done), where = st->where](
                 Status s, HttpResponse&& r, int attempts, double latency) {
    Result<Completion> result = Internal("unset");
    if (stream && !stream->error.ok()) {
      result = stream->error;
    } else if (stream && stream->parser.overflowed()) {
      result = ResourceExhausted(where + ": a stream event exceeds the response size limit");
    } else if (!s.ok()) {
      result = std::move(s);
    } else if (stream) {
      if (!stream->saw_done) {
        result = DataLoss(where + ": stream ended before data: [DONE] (truncated)");
      } else if (stream->completion.choices.empty()) {
        result = DataLoss(where + ": stream carried no choices");
      } else {
        result = std::move(stream->completion);
      }
    } else {
      result = ParseCompletion(r.body, chat, where);
    }
    CallRecord rec;
    rec.endpoint = ep->cfg.name;
    rec.ok = result.ok();
    rec.attempts = attempts;
    rec.latency_s = latency;
    if (result.ok()) {
      FillUsageFallback(*result);
      rec.prompt_tokens = result->usage.prompt_tokens;
      rec.completion_tokens = result->usage.completion_tokens;
      PriceCall(ep->cfg, gpu, rec);
      result->record = rec;
    }
    ledger_.Add(rec);
    done(std::move(result));
  };
  Admit(std::move(st));
}

void Client::Complete(std::string_view endpoint, const CompletionRequest& request,
                      Callback<Completion> done, const CallOptions& options) {
  Endpoint* ep = Find(endpoint);
  if (ep == nullptr) {
    done(NotConfigured(endpoint));
    return;
  }
  RunCompletion(
      ep, "/v1/completions",
      EncodeCompletionRequest(request, ep->cfg.model, static_cast<bool>(options.on_chunk)), false,
      std::move(done), options);
}

void Client::Chat(std::string_view endpoint, const ChatRequest& request, Callback<Completion> done,
                  const CallOptions& options) {
  Endpoint* ep = Find(endpoint);
  if (ep == nullptr) {
    done(NotConfigured(endpoint));
    return;
  }
  RunCompletion(ep, "/v1/chat/completions",
                EncodeChatRequest(request, ep->cfg.model, static_cast<bool>(options.on_chunk)),
                true, std::move(done), options);
}

namespace {
template <typename T>
std::pair<Callback<T>, std::future<Result<T>>> MakePromise() {
  auto p = std::make_shared<std::promise<Result<T>>>();
  auto f = p->get_future();
  return {[p](Result<T> r) { p->set_value(std::move(r)); }, std::move(f)};
}
}  // namespace

std::future<Result<Completion>> Client::Complete(std::string_view endpoint,
                                                 const CompletionRequest& request,
                                                 const CallOptions& options) {
  auto [cb, f] = MakePromise<Completion>();
  Complete(endpoint, request, std::move(cb), options);
  return std::move(f);
}

std::future<Result<Completion>> Client::Chat(std::string_view endpoint, const ChatRequest& request,
                                             const CallOptions& options) {
  auto [cb, f] = MakePromise<Completion>();
  Chat(endpoint, request, std::move(cb), options);
  return std::move(f);
}

// --- Management endpoints ---------------------------------------------------------------------

void Client::StartRaw(Endpoint* ep, bool post, const char* path, std::string body,
                      std::function<void(Status, std::string, const std::string&)> done) {
  auto st = std::make_shared<CallState>();
  st->ep = ep;
  st->post = post;
  st->url = ep->base + path;
  st->where = "llm endpoint '" + ep->cfg.name + "' (" + (post ? "POST " : "GET ") + st->url + ")";
  st->body = std::move(body);
  st->start = Clock::now();
  st->deadline = st->start + Ms(ep->cfg.limits.deadline_s);
  st->done = [this, ep, done = std::move(done), where = st->where](Status s, HttpResponse&& r,
                                                                   int attempts, double latency) {
    CallRecord rec;
    rec.endpoint = ep->cfg.name;
    rec.ok = s.ok();
    rec.attempts = attempts;
    rec.latency_s = latency;
    ledger_.Add(rec);
    done(std::move(s), std::move(r.body), where);
  };
  Admit(std::move(st));
}

std::future<Result<std::vector<ModelInfo>>> Client::Models(std::string_view endpoint) {
  auto [cb, f] = MakePromise<std::vector<ModelInfo>>();
  Endpoint* ep = Find(endpoint);
  if (ep == nullptr) {
    cb(NotConfigured(endpoint));
    return std::move(f);
  }
  StartRaw(ep, false, "/v1/models", "",
           [cb = cb](Status s, std::string body, const std::string& where) {
             if (!s.ok()) return cb(std::move(s));
             cb(ParseModels(body, where));
           });
  return std::move(f);
}

namespace {
std::pair<std::function<void(Status)>, std::future<Status>> MakeStatusPromise() {
  auto p = std::make_shared<std::promise<Status>>();
  auto f = p->get_future();
  return {[p](Status s) { p->set_value(std::move(s)); }, std::move(f)};
}
}  // namespace

std::future<Status> Client::Health(std::string_view endpoint) {
  auto [cb, f] = MakeStatusPromise();
  Endpoint* ep = Find(endpoint);
  if (ep == nullptr) {
    cb(NotConfigured(endpoint));
    return std::move(f);
  }
  StartRaw(ep, false, "/health", "",
           [cb = cb](Status s, std::string, const std::string&) { cb(std::move(s)); });
  return std::move(f);
}

std::future<Result<std::vector<int64_t>>> Client::Tokenize(std::string_view endpoint,
                                                           const std::string& text,
                                                           bool add_special_tokens) {
  auto [cb, f] = MakePromise<std::vector<int64_t>>();
  Endpoint* ep = Find(endpoint);
  if (ep == nullptr) {
    cb(NotConfigured(endpoint));
    return std::move(f);
  }
  nlohmann::json j = {
      {"model", ep->cfg.model}, {"prompt", text}, {"add_special_tokens", add_special_tokens}};
  StartRaw(ep, true, "/tokenize", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
           [cb = cb](Status s, std::string body, const std::string& where) {
             if (!s.ok()) return cb(std::move(s));
             cb(ParseTokenize(body, where));
           });
  return std::move(f);
}

std::future<Result<std::string>> Client::Detokenize(std::string_view endpoint,
                                                    const std::vector<int64_t>& ids) {
  auto [cb, f] = MakePromise<std::string>();
  Endpoint* ep = Find(endpoint);
  if (ep == nullptr) {
    cb(NotConfigured(endpoint));
    return std::move(f);
  }
  nlohmann::json j = {{"model", ep->cfg.model}, {"tokens", ids}};
  StartRaw(ep, true, "/detokenize", j.dump(),
           [cb = cb](Status s, std::string body, const std::string& where) {
             if (!s.ok()) return cb(std::move(s));
             cb(ParseDetokenize(body, where));
           });
  return std::move(f);
}

std::future<Status> Client::LoadLoraAdapter(std::string_view endpoint, const LoraAdapter& adapter) {
  auto [cb, f] = MakeStatusPromise();
  Endpoint* ep = Find(endpoint);
  if (ep == nullptr) {
    cb(NotConfigured(endpoint));
    return std::move(f);
  }
  nlohmann::json j = {{"lora_name", adapter.name}, {"lora_path", adapter.path}};
  if (adapter.load_inplace) j["load_inplace"] = true;
  StartRaw(ep, true, "/v1/load_lora_adapter",
           j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
           [cb = cb](Status s, std::string, const std::string&) { cb(std::move(s)); });
  return std::move(f);
}

std::future<Status> Client::UnloadLoraAdapter(std::string_view endpoint, const std::string& name) {
  auto [cb, f] = MakeStatusPromise();
  Endpoint* ep = Find(endpoint);
  if (ep == nullptr) {
    cb(NotConfigured(endpoint));
    return std::move(f);
  }
  nlohmann::json j = {{"lora_name", name}};
  StartRaw(ep, true, "/v1/unload_lora_adapter",
           j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
           [cb = cb](Status s, std::string, const std::string&) { cb(std::move(s)); });
  return std::move(f);
}

}  // namespace allot::llm
