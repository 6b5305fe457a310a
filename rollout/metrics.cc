#include "rollout/metrics.h"

#include <fmt/format.h>

#include <algorithm>

#include "rollout/failure_kind.h"

namespace allot::rollout {
namespace {

// Prometheus label values escape backslash, quote and newline.
std::string Label(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

WorkerMetrics::WorkerMetrics() : start_(std::chrono::steady_clock::now()) {
  second_stamp_.fill(-1);
}

int64_t WorkerMetrics::NowSecond() const {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - start_)
      .count();
}

void WorkerMetrics::RecordEpisode(const v1::Trajectory& t, double wall_seconds) {
  episodes_total_.fetch_add(1);
  const int64_t sec = NowSecond();
  std::lock_guard<std::mutex> lock(mu_);
  const int slot = static_cast<int>(sec % kWindow);
  if (second_stamp_[slot] != sec) {
    second_stamp_[slot] = sec;
    second_count_[slot] = 0;
  }
  ++second_count_[slot];
  if (t.failure().reason() != v1::FAILURE_REASON_NONE)
    ++failures_[FailureReasonLabel(t.failure().reason())];
  size_t b = 0;
  while (b < kLatencyBuckets.size() && wall_seconds > kLatencyBuckets[b]) ++b;
  ++latency_hist_[b];
  latency_sum_ += wall_seconds;
  for (const auto& e : t.accounting().endpoints()) {
    Endpoint& agg = endpoints_[e.endpoint()];
    agg.calls += e.calls();
    agg.latency_seconds += e.latency_ms() / 1000.0;
    agg.tokens += e.prompt_tokens() + e.completion_tokens();
    agg.cost_usd += e.cost_usd();
  }
}

void WorkerMetrics::RecordRejected(v1::RejectReason reason) {
  std::string name = v1::RejectReason_Name(reason);
  const std::string prefix = "REJECT_REASON_";
  if (name.rfind(prefix, 0) == 0) name = name.substr(prefix.size());
  std::transform(name.begin(), name.end(), name.begin(), ::tolower);
  std::lock_guard<std::mutex> lock(mu_);
  ++rejected_[name];
}

double WorkerMetrics::EpisodesPerSecond() const {
  const int64_t now = NowSecond();
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t n = 0;
  for (int i = 0; i < kWindow; ++i) {
    if (second_stamp_[i] >= now - 10 && second_stamp_[i] < now) n += second_count_[i];
  }
  const int64_t span = std::min<int64_t>(10, std::max<int64_t>(now, 1));
  return static_cast<double>(n) / static_cast<double>(span);
}

std::string WorkerMetrics::Render(int64_t in_flight, int64_t unacked, int64_t capacity,
                                  bool draining, uint64_t policy_version) const {
  const double rate = EpisodesPerSecond();
  std::string out;
  out += "# HELP allot_worker_episodes_total Episodes finished (including failed ones).\n";
  out += "# TYPE allot_worker_episodes_total counter\n";
  out += fmt::format("allot_worker_episodes_total {}\n", episodes_total_.load());
  out += "# HELP allot_worker_episodes_per_second Finished episodes per second, last 10 s.\n";
  out += "# TYPE allot_worker_episodes_per_second gauge\n";
  out += fmt::format("allot_worker_episodes_per_second {}\n", rate);
  out += "# HELP allot_worker_in_flight_episodes Episodes accepted and not yet finished.\n";
  out += "# TYPE allot_worker_in_flight_episodes gauge\n";
  out += fmt::format("allot_worker_in_flight_episodes {}\n", in_flight);
  out += "# HELP allot_worker_unacked_trajectories Finished, waiting for the learner's ack.\n";
  out += "# TYPE allot_worker_unacked_trajectories gauge\n";
  out += fmt::format("allot_worker_unacked_trajectories {}\n", unacked);
  out += "# HELP allot_worker_capacity Episodes held at once, from acceptance to the ack.\n";
  out += "# TYPE allot_worker_capacity gauge\n";
  out += fmt::format("allot_worker_capacity {}\n", capacity);
  out += "# HELP allot_worker_draining 1 while draining after SIGTERM, else 0.\n";
  out += "# TYPE allot_worker_draining gauge\n";
  out += fmt::format("allot_worker_draining {}\n", draining ? 1 : 0);
  out += "# HELP allot_worker_policy_version Policy weights version last applied (0: none).\n";
  out += "# TYPE allot_worker_policy_version gauge\n";
  out += fmt::format("allot_worker_policy_version {}\n", policy_version);
  std::lock_guard<std::mutex> lock(mu_);
  out += "# HELP allot_worker_episode_failures_total Failed episodes by reason.\n";
  out += "# TYPE allot_worker_episode_failures_total counter\n";
  for (const auto& [reason, n] : failures_) {
    out +=
        fmt::format("allot_worker_episode_failures_total{{reason=\"{}\"}} {}\n", Label(reason), n);
  }
  out += "# HELP allot_worker_rejected_total Episode requests rejected by reason.\n";
  out += "# TYPE allot_worker_rejected_total counter\n";
  for (const auto& [reason, n] : rejected_) {
    out += fmt::format("allot_worker_rejected_total{{reason=\"{}\"}} {}\n", Label(reason), n);
  }
  out += "# HELP allot_worker_episode_seconds Episode wall time.\n";
  out += "# TYPE allot_worker_episode_seconds histogram\n";
  uint64_t cumulative = 0;
  for (size_t i = 0; i < kLatencyBuckets.size(); ++i) {
    cumulative += latency_hist_[i];
    out += fmt::format("allot_worker_episode_seconds_bucket{{le=\"{}\"}} {}\n", kLatencyBuckets[i],
                       cumulative);
  }
  cumulative += latency_hist_.back();
  out += fmt::format("allot_worker_episode_seconds_bucket{{le=\"+Inf\"}} {}\n", cumulative);
  out += fmt::format("allot_worker_episode_seconds_sum {}\n", latency_sum_);
  out += fmt::format("allot_worker_episode_seconds_count {}\n", cumulative);
  out += "# HELP allot_worker_endpoint_latency_seconds Summed endpoint request latency.\n";
  out += "# TYPE allot_worker_endpoint_latency_seconds summary\n";
  for (const auto& [name, e] : endpoints_) {
    out += fmt::format("allot_worker_endpoint_latency_seconds_sum{{endpoint=\"{}\"}} {}\n",
                       Label(name), e.latency_seconds);
    out += fmt::format("allot_worker_endpoint_latency_seconds_count{{endpoint=\"{}\"}} {}\n",
                       Label(name), e.calls);
  }
  out += "# HELP allot_worker_endpoint_tokens_total Prompt plus completion tokens by endpoint.\n";
  out += "# TYPE allot_worker_endpoint_tokens_total counter\n";
  for (const auto& [name, e] : endpoints_) {
    out += fmt::format("allot_worker_endpoint_tokens_total{{endpoint=\"{}\"}} {}\n", Label(name),
                       e.tokens);
  }
  out += "# HELP allot_worker_endpoint_cost_usd_total Dollars spent by endpoint.\n";
  out += "# TYPE allot_worker_endpoint_cost_usd_total counter\n";
  for (const auto& [name, e] : endpoints_) {
    out += fmt::format("allot_worker_endpoint_cost_usd_total{{endpoint=\"{}\"}} {}\n", Label(name),
                       e.cost_usd);
  }
  return out;
}

}  // namespace allot::rollout
