#include "llm/serve/serve_metrics.h"

#include <algorithm>
#include <sstream>

namespace allot::llm::serve {
namespace {

std::string Num(double v) {
  std::ostringstream s;
  s.precision(10);
  s << v;
  return s.str();
}

const std::vector<double>& SizeBounds() {
  static const std::vector<double> b = {1, 2, 4, 8, 16, 32, 64, 128, 256};
  return b;
}

const std::vector<double>& TimeBounds() {
  static const std::vector<double> b = {0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                        0.5,   1,     2.5,  5,     10,   30,  60};
  return b;
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::Observe(double v) {
  const size_t i =
      static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin());
  ++counts_[i];
  ++count_;
  sum_ += v;
}

void Histogram::Render(const std::string& name, std::string* out) const {
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i];
    *out += name + "_bucket{le=\"" + Num(bounds_[i]) + "\"} " + std::to_string(cumulative) + "\n";
  }
  *out += name + "_bucket{le=\"+Inf\"} " + std::to_string(count_) + "\n";
  *out += name + "_sum " + Num(sum_) + "\n";
  *out += name + "_count " + std::to_string(count_) + "\n";
}

ServeMetrics::ServeMetrics()
    : batch_requests_(SizeBounds()),
      batch_sequences_(SizeBounds()),
      ttft_(TimeBounds()),
      latency_(TimeBounds()) {}

void ServeMetrics::CountRequest(const std::string& endpoint, int status) {
  std::lock_guard lock(mu_);
  ++requests_[{endpoint, status}];
}

void ServeMetrics::AddTokens(int64_t prompt, int64_t generated) {
  std::lock_guard lock(mu_);
  prompt_tokens_ += prompt;
  generation_tokens_ += generated;
}

void ServeMetrics::SetQueue(int64_t running, int64_t waiting) {
  std::lock_guard lock(mu_);
  running_ = running;
  waiting_ = waiting;
}

void ServeMetrics::ObserveBatch(int64_t requests, int64_t sequences) {
  std::lock_guard lock(mu_);
  ++batches_;
  if (requests > 1) batched_requests_ += requests;
  max_batch_requests_ = std::max(max_batch_requests_, requests);
  batch_requests_.Observe(static_cast<double>(requests));
  batch_sequences_.Observe(static_cast<double>(sequences));
}

void ServeMetrics::ObserveTimeToFirstToken(double seconds) {
  std::lock_guard lock(mu_);
  ttft_.Observe(seconds);
}

void ServeMetrics::ObserveLatency(double seconds) {
  std::lock_guard lock(mu_);
  latency_.Observe(seconds);
}

std::string ServeMetrics::Render() const {
  std::lock_guard lock(mu_);
  std::string out;
  auto head = [&](const char* name, const char* type, const char* help) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  };
  head("allot_serve_http_requests_total", "counter", "HTTP requests by endpoint and status code.");
  for (const auto& [key, n] : requests_) {
    out += "allot_serve_http_requests_total{endpoint=\"" + key.first + "\",status=\"" +
           std::to_string(key.second) + "\"} " + std::to_string(n) + "\n";
  }
  head("allot_serve_prompt_tokens_total", "counter", "Prompt tokens processed.");
  out += "allot_serve_prompt_tokens_total " + std::to_string(prompt_tokens_) + "\n";
  head("allot_serve_generation_tokens_total", "counter", "Tokens generated.");
  out += "allot_serve_generation_tokens_total " + std::to_string(generation_tokens_) + "\n";
  head("allot_serve_num_requests_running", "gauge", "Sequences in the batch being decoded.");
  out += "allot_serve_num_requests_running " + std::to_string(running_) + "\n";
  head("allot_serve_num_requests_waiting", "gauge", "Requests queued for the next batch.");
  out += "allot_serve_num_requests_waiting " + std::to_string(waiting_) + "\n";
  head("allot_serve_batches_total", "counter", "Decode steps run.");
  out += "allot_serve_batches_total " + std::to_string(batches_) + "\n";
  head("allot_serve_batched_requests_total", "counter",
       "Sum over decode steps of the requests in steps that two or more requests shared.");
  out += "allot_serve_batched_requests_total " + std::to_string(batched_requests_) + "\n";
  head("allot_serve_batch_requests", "histogram", "Requests per decode step.");
  batch_requests_.Render("allot_serve_batch_requests", &out);
  head("allot_serve_batch_sequences", "histogram", "Sequences (requests times n) per decode step.");
  batch_sequences_.Render("allot_serve_batch_sequences", &out);
  head("allot_serve_time_to_first_token_seconds", "histogram",
       "Time from arrival to the first token.");
  ttft_.Render("allot_serve_time_to_first_token_seconds", &out);
  head("allot_serve_e2e_request_latency_seconds", "histogram",
       "Time from arrival to the last token.");
  latency_.Render("allot_serve_e2e_request_latency_seconds", &out);
  return out;
}

int64_t ServeMetrics::requests(const std::string& endpoint, int status) const {
  std::lock_guard lock(mu_);
  auto it = requests_.find({endpoint, status});
  return it == requests_.end() ? 0 : it->second;
}

int64_t ServeMetrics::batches() const {
  std::lock_guard lock(mu_);
  return batches_;
}

int64_t ServeMetrics::max_batch_requests() const {
  std::lock_guard lock(mu_);
  return max_batch_requests_;
}

int64_t ServeMetrics::generation_tokens() const {
  std::lock_guard lock(mu_);
  return generation_tokens_;
}

}  // namespace allot::llm::serve
