// R2-Reasoner inference against the single models (Sec. 5, Table 1): the trained decomposer and
// allocator (one policy, optionally a LoRA adapter of its endpoint) run every task through the
// pool, and each pool model answers every task alone (the r2.prompts.single prompt). Each
// method reports accuracy, API cost (C_API: the pool's calls; the policy's own turns are
// reported apart, and in the total), energy, and for the allocator where it sent the subtasks.
// "decomposed:<model>" runs the policy's decomposition with every subtask on one model.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "core/status.h"
#include "datasets/example.h"
#include "datasets/jsonl_loader.h"
#include "envs/r2/r2_config.h"
#include "envs/runtime/env.h"

namespace allot {
class ProgressBar;
}  // namespace allot

namespace allot::envs::r2 {

struct R2EvalOptions {
  // "allocator", a pool model's name (it answers alone), or "decomposed:<model>" (the policy
  // decomposes, every subtask runs on that model: the pool's reach whatever the allocation);
  // empty = the allocator and every pool model.
  std::vector<std::string> methods;
  int64_t limit = 0;    // first N examples; 0 = all
  // The policy's LoRA adapter on its endpoint ("" = base model): NAME for both roles, or
  // "decomposer=NAME,allocator=NAME", one per role (what alternating GRPO trains, Sec. 4.3).
  std::string adapter;
  // Counts the methods x examples to evaluate, then each one done (not owned); null: none.
  ProgressBar* progress = nullptr;
};

// The policy snapshot of R2EvalOptions::adapter (null for ""); InvalidArgument names a malformed
// list or a role without an adapter.
Result<std::shared_ptr<runtime::PolicySnapshot>> EvalPolicy(const std::string& adapter);

// One example's outcome under a method.
struct R2ItemOutcome {
  std::string id;  // the example's id
  bool correct = false;
  std::string failure;           // FailureReasonName, empty when the episode ran
  std::string format_error;      // the allocator's malformed decomposition or allocation
  std::string models;            // the allocator's models per subtask ("t0,t2"), or the model
  double cost_usd = 0.0;         // every call
  double policy_cost_usd = 0.0;  // the decomposer's and allocator's turns
  std::string difficulty;        // the item's "difficulty" field, when it has one
  std::string decomposition;     // the allocator method's plan as the policy wrote it (cut), so
  std::string allocation;        // that a malformed one can be read

  nlohmann::json ToJson() const;
};

struct R2MethodResult {
  std::string method;
  int64_t episodes = 0;
  int64_t correct = 0;
  int64_t failed = 0;
  int64_t malformed = 0;  // allocator episodes whose plan did not parse (scored 0)
  double cost_usd = 0.0;  // summed, every call
  double policy_cost_usd = 0.0;
  double energy_j = 0.0;
  double latency_s = 0.0;
  std::map<std::string, int64_t> subtasks_per_model;  // allocator: subtasks sent to each model
  std::vector<R2ItemOutcome> items;

  double accuracy() const { return episodes > 0 ? double(correct) / double(episodes) : 0.0; }
  // C_API per task: what the pool's calls cost.
  double mean_api_cost_usd() const;
  double mean_cost_usd() const;
  nlohmann::json ToJson() const;
};

// The dataset item the env reads for an example.
std::string R2ItemJson(const datasets::Example& example);

// Runs every method over `examples` (sequentially; the endpoint pool does the batching).
Result<std::vector<R2MethodResult>> RunR2Eval(const R2EnvConfig& config,
                                              const std::vector<datasets::Example>& examples,
                                              const R2EvalOptions& options);

void PrintR2Eval(const std::vector<R2MethodResult>& results, std::ostream& out);

// `allot eval` on an R2 recipe: loads `data`, runs `method` ("" or "all": every method; else a
// comma-separated list), prints the table and writes JSON to `json_path` when set. Returns the
// process exit code (0, or 1 with the error on `err`).
int RunR2EvalCommand(const R2EnvConfig& config, const datasets::DatasetConfig& data,
                     const std::string& method, const std::string& adapter, int64_t limit,
                     const std::string& json_path, std::ostream& out, std::ostream& err);

}  // namespace allot::envs::r2
