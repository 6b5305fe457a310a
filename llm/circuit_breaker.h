// Circuit breaker for one endpoint. Not thread-safe: the owner holds a lock.
//
// Closed: calls flow. After `failure_threshold` consecutive failures (transport errors, 5xx) it
// opens: calls fail fast. Once `cooldown` has passed, the next call asks for a probe of /health;
// a healthy probe closes the breaker, a failed one reopens it for another cooldown.
#pragma once

#include <chrono>

namespace allot::llm {

class CircuitBreaker {
 public:
  using Clock = std::chrono::steady_clock;
  enum class Gate { kAllow, kReject, kProbe };

  CircuitBreaker(int failure_threshold, Clock::duration cooldown)
      : threshold_(failure_threshold), cooldown_(cooldown) {}

  Gate Check(Clock::time_point now) const {
    if (!open_) return Gate::kAllow;
    return now - opened_at_ >= cooldown_ ? Gate::kProbe : Gate::kReject;
  }
  bool is_open() const { return open_; }
  int consecutive_failures() const { return failures_; }

  void RecordSuccess() {
    failures_ = 0;
    open_ = false;
  }
  // Returns true when this failure opened the breaker.
  bool RecordFailure(Clock::time_point now) {
    ++failures_;
    if (!open_ && failures_ >= threshold_) {
      open_ = true;
      opened_at_ = now;
      ++times_opened_;
      return true;
    }
    return false;
  }
  void ProbeFailed(Clock::time_point now) {
    open_ = true;
    opened_at_ = now;
  }
  int times_opened() const { return times_opened_; }

 private:
  int threshold_;
  Clock::duration cooldown_;
  int failures_ = 0;
  bool open_ = false;
  Clock::time_point opened_at_;
  int times_opened_ = 0;
};

}  // namespace allot::llm
