// The server's Prometheus metrics (text exposition format 0.0.4), named after vLLM's where a
// vLLM metric exists (vllm:num_requests_running -> allot_serve_num_requests_running, ...; a
// colon is for recording rules, and promtool check metrics refuses it in an exported name).
//
// Thread-safe: the HTTP threads and the scheduler update it concurrently.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace allot::llm::serve {

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void Observe(double v);
  // Appends the _bucket, _sum and _count lines of `name`.
  void Render(const std::string& name, std::string* out) const;
  uint64_t count() const { return count_; }
  double sum() const { return sum_; }

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // cumulative at render time; per bucket here
  uint64_t count_ = 0;
  double sum_ = 0.0;
};

class ServeMetrics {
 public:
  ServeMetrics();

  void CountRequest(const std::string& endpoint, int status);
  void AddTokens(int64_t prompt, int64_t generated);
  void SetQueue(int64_t running, int64_t waiting);
  // One decode step: how many requests and sequences shared it.
  void ObserveBatch(int64_t requests, int64_t sequences);
  void ObserveTimeToFirstToken(double seconds);
  void ObserveLatency(double seconds);

  std::string Render() const;

  // For tests and the benchmark.
  int64_t requests(const std::string& endpoint, int status) const;
  int64_t batches() const;
  int64_t max_batch_requests() const;
  int64_t generation_tokens() const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, int64_t> requests_;
  int64_t prompt_tokens_ = 0;
  int64_t generation_tokens_ = 0;
  int64_t running_ = 0;
  int64_t waiting_ = 0;
  int64_t batches_ = 0;
  int64_t batched_requests_ = 0;  // sum over steps of the requests in steps shared by 2+
  int64_t max_batch_requests_ = 0;
  Histogram batch_requests_;
  Histogram batch_sequences_;
  Histogram ttft_;
  Histogram latency_;
};

}  // namespace allot::llm::serve
