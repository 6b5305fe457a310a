// Cost, energy and latency accounting for every LLM call.
//
// R2-Reasoner (Sec. 5.1) and CogER report API cost, energy and latency as first-class results,
// so each call yields a CallRecord, and records roll up into UsageTotals per episode (owned by
// the episode, not thread-safe) and per run (UsageLedger, thread-safe, owned by the Client).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "llm/endpoint_config.h"

namespace allot::llm {

// One call to one endpoint, retries included.
struct CallRecord {
  std::string endpoint;
  bool ok = false;
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int attempts = 0;        // HTTP attempts made (retries = attempts - 1)
  double latency_s = 0.0;  // submit to completion, queueing and backoff included
  double cost_usd = 0.0;
  double energy_j = 0.0;
};

// API cost: prompt and completion tokens priced separately per 1M (R2-Reasoner Sec. 5.1).
double ApiCostUsd(const EndpointConfig& ep, int64_t prompt_tokens, int64_t completion_tokens);

// Energy: FLOPs ~= 2 x N_params x (input + output tokens), times joules per FLOP = TDP / peak
// FLOP/s. N_params is the active count for MoE (R2-Reasoner Sec. 5.1).
double EnergyJoules(const EndpointConfig& ep, const GpuProfile& gpu, int64_t prompt_tokens,
                    int64_t completion_tokens);

// Fills cost and energy of a record from its token counts.
void PriceCall(const EndpointConfig& ep, const GpuProfile& gpu, CallRecord& record);

// A sum of CallRecords. Plain value; merge per-episode totals into per-run totals.
struct UsageTotals {
  int64_t calls = 0;
  int64_t failed_calls = 0;
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t retries = 0;
  double latency_s = 0.0;  // sum over calls
  double max_latency_s = 0.0;
  double cost_usd = 0.0;
  double energy_j = 0.0;

  void Add(const CallRecord& r);
  void Merge(const UsageTotals& other);
  double mean_latency_s() const { return calls > 0 ? latency_s / static_cast<double>(calls) : 0; }
};

// Totals overall and per endpoint name. Use one per episode and one per run.
struct UsageReport {
  UsageTotals total;
  std::map<std::string, UsageTotals> by_endpoint;

  void Add(const CallRecord& r);
  void Merge(const UsageReport& other);
  // {"total": {...}, "by_endpoint": {"name": {...}}} for metrics sinks.
  std::string ToJson() const;
};

// Thread-safe run-level ledger.
class UsageLedger {
 public:
  void Add(const CallRecord& r);
  UsageReport Snapshot() const;
  void Reset();

 private:
  mutable std::mutex mu_;
  UsageReport report_;
};

}  // namespace allot::llm
