// Worker-side counters, exposed as Prometheus text on /metrics.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "proto/allot/v1/rollout.pb.h"

namespace allot::rollout {

// Thread-safe.
class WorkerMetrics {
 public:
  WorkerMetrics();

  // Records one finished episode: its failure reason (NONE when it succeeded), wall time and
  // per-endpoint usage.
  void RecordEpisode(const v1::Trajectory& t, double wall_seconds);
  void RecordRejected(v1::RejectReason reason);

  // Prometheus text exposition; the gauges come from the caller (the service knows them).
  std::string Render(int64_t in_flight, int64_t unacked, int64_t capacity, bool draining,
                     uint64_t policy_version) const;

  // Finished episodes per second over the last 10 full seconds.
  double EpisodesPerSecond() const;
  uint64_t episodes_total() const { return episodes_total_.load(); }

 private:
  static constexpr int kWindow = 16;
  static constexpr std::array<double, 10> kLatencyBuckets = {0.01, 0.05, 0.1, 0.25, 0.5,
                                                             1,    2.5,  5,   10,   30};
  int64_t NowSecond() const;

  std::chrono::steady_clock::time_point start_;
  std::atomic<uint64_t> episodes_total_{0};
  mutable std::mutex mu_;
  std::array<int64_t, kWindow> second_stamp_{};
  std::array<uint64_t, kWindow> second_count_{};
  std::map<std::string, uint64_t> failures_;
  std::map<std::string, uint64_t> rejected_;
  std::array<uint64_t, kLatencyBuckets.size() + 1> latency_hist_{};
  double latency_sum_ = 0;
  struct Endpoint {
    uint64_t calls = 0;
    double latency_seconds = 0;
    uint64_t tokens = 0;
    double cost_usd = 0;
  };
  std::map<std::string, Endpoint> endpoints_;
};

}  // namespace allot::rollout
