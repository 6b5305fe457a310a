// llm::Client's call pipeline: admit (circuit breaker, concurrency limit) -> launch (rate
// limit) -> attempt -> response (retry with backoff, or finish), and the breaker's probe.
#include <random>

#include "llm/client_internal.h"

namespace allot::llm {
namespace {

using client_internal::Clock;
using client_internal::Ms;

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

}  // namespace

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

}  // namespace allot::llm
