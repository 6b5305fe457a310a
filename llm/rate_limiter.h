// Token-bucket rate limiter for one endpoint. Not thread-safe: the owner holds a lock.
#pragma once

#include <algorithm>
#include <chrono>

namespace allot::llm {

class TokenBucket {
 public:
  using Clock = std::chrono::steady_clock;

  // rate <= 0 disables the limit. burst <= 0 means max(1, rate).
  TokenBucket(double rate_per_s, double burst)
      : rate_(rate_per_s), burst_(burst > 0 ? burst : std::max(1.0, rate_per_s)), tokens_(burst_) {}

  // Takes one token and returns how long the caller must wait before using it. Tokens may go
  // negative: waiting callers hold reservations in arrival order.
  Clock::duration Reserve(Clock::time_point now) {
    if (rate_ <= 0) return Clock::duration::zero();
    if (last_ != Clock::time_point()) {
      const double elapsed = std::chrono::duration<double>(now - last_).count();
      tokens_ = std::min(burst_, tokens_ + elapsed * rate_);
    }
    last_ = now;
    tokens_ -= 1.0;
    if (tokens_ >= 0) return Clock::duration::zero();
    return std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(-tokens_ / rate_));
  }

 private:
  double rate_;
  double burst_;
  double tokens_;
  Clock::time_point last_;
};

}  // namespace allot::llm
