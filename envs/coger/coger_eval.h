// CogER inference (Sec. 5, Table 4): route then answer, and the baselines side by side: the
// router, every fixed level L1..L4 and random routing, each with accuracy, API cost, energy,
// latency and the level distribution.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "core/status.h"
#include "datasets/example.h"
#include "datasets/jsonl_loader.h"
#include "envs/coger/coger_config.h"

namespace allot {
class ProgressBar;
}  // namespace allot

namespace allot::envs::coger {

struct CogerEvalOptions {
  // "router", "L1".."L4", "random"; empty = all of them.
  std::vector<std::string> methods;
  uint64_t seed = 1;    // random routing
  int64_t limit = 0;    // first N examples; 0 = all
  std::string adapter;  // the router's LoRA adapter name on its endpoint ("" = base model)
  // Counts the methods x examples to evaluate, then each one done (not owned; may be shared by
  // evaluations running at once); null: no progress.
  ProgressBar* progress = nullptr;
};

// One example's outcome under a method: where it went and what it cost.
struct CogerItemOutcome {
  int level = 0;           // 0 = no valid tag
  bool correct = false;
  std::string failure;     // FailureReasonName, empty when the episode ran
  double cost_usd = 0.0;
  std::string difficulty;  // the item's "difficulty" field, when it has one

  nlohmann::json ToJson() const;
};

struct CogerMethodResult {
  std::string method;
  int64_t episodes = 0;
  int64_t correct = 0;
  int64_t failed = 0;
  double cost_usd = 0.0;  // summed: what the routing decisions spent
  // Summed spend of the L_min oracle (info kOracleCostInfo), never part of cost_usd. 0 under
  // `allot eval`, which grades accuracy directly and runs no oracle.
  double oracle_cost_usd = 0.0;
  double energy_j = 0.0;   // summed
  double latency_s = 0.0;  // summed episode wall time
  int64_t llm_calls = 0;
  int64_t tokens = 0;
  std::vector<int64_t> levels = std::vector<int64_t>(5, 0);  // [0] = no valid tag, [k] = Lk
  std::map<std::string, int64_t> failures;  // failed episodes by reason (FailureReasonName)
  std::vector<CogerItemOutcome> items;      // per example, in order

  double accuracy() const { return episodes > 0 ? double(correct) / double(episodes) : 0.0; }
  nlohmann::json ToJson() const;
};

// The dataset item the env reads for an example.
std::string CogerItemJson(const datasets::Example& example);

// Runs every method over `examples` (sequentially; the endpoint pool does the batching).
Result<std::vector<CogerMethodResult>> RunCogerEval(const CogerEnvConfig& config,
                                                    const std::vector<datasets::Example>& examples,
                                                    const CogerEvalOptions& options);

// The side-by-side table.
void PrintCogerEval(const std::vector<CogerMethodResult>& results, std::ostream& out);

// `allot eval` on a CogER recipe: loads `data`, runs `method` ("" or "all": every method;
// else a comma-separated list), prints the table and writes JSON to `json_path` when set. A
// non-empty `adapter` routes with that LoRA adapter of the router endpoint (a trained router).
// Returns the process exit code (0, or 1 with the error on `err`).
int RunCogerEvalCommand(const CogerEnvConfig& config, const datasets::DatasetConfig& data,
                        const std::string& method, const std::string& adapter, int64_t limit,
                        uint64_t seed, const std::string& json_path, std::ostream& out,
                        std::ostream& err);

}  // namespace allot::envs::coger
