#include "llm/accounting.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace allot::llm {

double ApiCostUsd(const EndpointConfig& ep, int64_t prompt_tokens, int64_t completion_tokens) {
  return (static_cast<double>(prompt_tokens) * ep.usd_per_m_input +
          static_cast<double>(completion_tokens) * ep.usd_per_m_output) /
         1e6;
}

double EnergyJoules(const EndpointConfig& ep, const GpuProfile& gpu, int64_t prompt_tokens,
                    int64_t completion_tokens) {
  const double tokens = static_cast<double>(prompt_tokens + completion_tokens);
  return 2.0 * ep.EffectiveParams() * tokens * gpu.JoulesPerFlop();
}

void PriceCall(const EndpointConfig& ep, const GpuProfile& gpu, CallRecord& record) {
  record.cost_usd = ApiCostUsd(ep, record.prompt_tokens, record.completion_tokens);
  record.energy_j = EnergyJoules(ep, gpu, record.prompt_tokens, record.completion_tokens);
}

void UsageTotals::Add(const CallRecord& r) {
  calls += 1;
  failed_calls += r.ok ? 0 : 1;
  prompt_tokens += r.prompt_tokens;
  completion_tokens += r.completion_tokens;
  retries += std::max(0, r.attempts - 1);
  latency_s += r.latency_s;
  max_latency_s = std::max(max_latency_s, r.latency_s);
  cost_usd += r.cost_usd;
  energy_j += r.energy_j;
}

void UsageTotals::Merge(const UsageTotals& o) {
  calls += o.calls;
  failed_calls += o.failed_calls;
  prompt_tokens += o.prompt_tokens;
  completion_tokens += o.completion_tokens;
  retries += o.retries;
  latency_s += o.latency_s;
  max_latency_s = std::max(max_latency_s, o.max_latency_s);
  cost_usd += o.cost_usd;
  energy_j += o.energy_j;
}

void UsageReport::Add(const CallRecord& r) {
  total.Add(r);
  by_endpoint[r.endpoint].Add(r);
}

void UsageReport::Merge(const UsageReport& other) {
  total.Merge(other.total);
  for (const auto& [name, t] : other.by_endpoint) by_endpoint[name].Merge(t);
}

namespace {
nlohmann::json TotalsJson(const UsageTotals& t) {
  return {{"calls", t.calls},
          {"failed_calls", t.failed_calls},
          {"prompt_tokens", t.prompt_tokens},
          {"completion_tokens", t.completion_tokens},
          {"retries", t.retries},
          {"mean_latency_s", t.mean_latency_s()},
          {"max_latency_s", t.max_latency_s},
          {"cost_usd", t.cost_usd},
          {"energy_j", t.energy_j}};
}
}  // namespace

std::string UsageReport::ToJson() const {
  nlohmann::json j;
  j["total"] = TotalsJson(total);
  j["by_endpoint"] = nlohmann::json::object();
  for (const auto& [name, t] : by_endpoint) j["by_endpoint"][name] = TotalsJson(t);
  return j.dump();
}

void UsageLedger::Add(const CallRecord& r) {
  std::lock_guard<std::mutex> lock(mu_);
  report_.Add(r);
}

UsageReport UsageLedger::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return report_;
}

void UsageLedger::Reset() {
  std::lock_guard<std::mutex> lock(mu_);
  report_ = UsageReport();
}

}  // namespace allot::llm
