// The insides of llm::Client that its two files share: an endpoint's state (its config, the
// concurrency queue, the token bucket, the circuit breaker) and one call's state as it moves
// through the pipeline (llm/call_pipeline.cc). Not part of the client's API.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "llm/circuit_breaker.h"
#include "llm/client.h"
#include "llm/http_transport.h"
#include "llm/rate_limiter.h"

namespace allot::llm {
namespace client_internal {

using Clock = std::chrono::steady_clock;

inline std::chrono::milliseconds Ms(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000.0));
}

// An endpoint's base URL without trailing slashes and without a trailing /v1.
inline std::string NormalizeBase(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  if (url.size() >= 3 && url.compare(url.size() - 3, 3, "/v1") == 0) url.resize(url.size() - 3);
  return url;
}

}  // namespace client_internal

struct Client::Endpoint {
  explicit Endpoint(EndpointConfig c)
      : cfg(std::move(c)),
        base(client_internal::NormalizeBase(cfg.base_url)),
        bucket(cfg.limits.requests_per_s, cfg.limits.burst),
        breaker(cfg.limits.breaker_failures,
                std::chrono::duration_cast<client_internal::Clock::duration>(
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
  client_internal::Clock::time_point start;
  client_internal::Clock::time_point deadline;
  int attempts = 0;
  std::function<bool(std::string_view)> on_data;
  std::function<bool()> may_retry;  // streams: only before the first chunk
  std::function<void(Status, HttpResponse&&, int attempts, double latency_s)> done;
};

}  // namespace allot::llm
