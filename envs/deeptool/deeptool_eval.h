// DeepTool inference (Sec. 2.2): whole tool-integrated episodes on eval_data, the policy's code
// run in the sandbox after every <code> step, the <answer> step graded. The figures are the
// paper's accuracy (Sec. 3.2) and tokens per problem (Sec. 3.5's token cost-effectiveness), plus
// steps and code runs per problem, cost and energy, and how episodes broke the step schema.
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
#include "envs/deeptool/deeptool_config.h"
#include "tools/tool_registry.h"

namespace allot {
class ProgressBar;
}  // namespace allot

namespace allot::envs::deeptool {

struct DeepToolEvalOptions {
  // "tir" (the policy endpoint's interleaved episodes); empty = all of them.
  std::vector<std::string> methods;
  int64_t limit = 0;    // first N examples; 0 = all
  std::string adapter;  // a LoRA adapter of the policy endpoint ("" = base model)
  // Runs the code steps; null = the sandbox that the recipe's tools section builds.
  std::shared_ptr<tools::ToolRegistry> tools;
  // Counts the methods x examples to evaluate, then each one done (not owned); null: none.
  ProgressBar* progress = nullptr;
};

// One example's outcome.
struct DeepToolItemOutcome {
  std::string id;  // the example's id
  bool correct = false;
  bool answered = false;     // the episode ended with an answer step
  std::string failure;       // FailureReasonName when the episode failed, else empty
  std::string format_error;  // why the policy's episode ended without an answer (scored 0)
  int64_t steps = 0;         // policy steps
  int64_t code_runs = 0;     // programs run in the sandbox
  double cost_usd = 0.0;
  std::string difficulty;  // the item's "difficulty" field, when it has one

  nlohmann::json ToJson() const;
};

struct DeepToolMethodResult {
  std::string method;
  int64_t episodes = 0;
  int64_t correct = 0;
  int64_t answered = 0;
  int64_t failed = 0;     // the episode failed (endpoint, sandbox, env): no outcome
  int64_t malformed = 0;  // the policy broke the schema or ran into a limit: scored 0
  int64_t steps = 0;
  int64_t code_runs = 0;
  int64_t llm_calls = 0;
  int64_t tokens = 0;
  double cost_usd = 0.0;                    // summed
  double energy_j = 0.0;                    // summed
  double latency_s = 0.0;                   // summed episode wall time
  std::map<std::string, int64_t> failures;  // failed episodes by reason
  std::vector<DeepToolItemOutcome> items;   // per example, in order

  double accuracy() const { return episodes > 0 ? double(correct) / double(episodes) : 0.0; }
  nlohmann::json ToJson() const;
};

// The dataset item the env reads for an example (question with its options, answer, format).
std::string DeepToolItemJson(const datasets::Example& example);

// Runs every method over `examples`, greedy, in interleaved mode whatever the recipe's mode
// (a stepwise training recipe evaluates the policy it trained; tools.code must be on), a
// malformed step counted as `malformed` (scored 0) whatever deeptool.format_errors says.
Result<std::vector<DeepToolMethodResult>> RunDeepToolEval(
    const DeepToolEnvConfig& config, const std::vector<datasets::Example>& examples,
    const DeepToolEvalOptions& options);

// The table, then accuracy per difficulty and the failure reasons.
void PrintDeepToolEval(const std::vector<DeepToolMethodResult>& results, std::ostream& out);

// `allot eval` on a DeepTool recipe: loads `data`, runs `method` ("" or "all": every method,
// else a comma-separated list), prints the table and writes JSON to `json_path` when set.
// Returns the process exit code (0, or 1 with the error on `err`).
int RunDeepToolEvalCommand(const DeepToolEnvConfig& config, const datasets::DatasetConfig& data,
                           const std::string& method, const std::string& adapter, int64_t limit,
                           const std::string& json_path, std::ostream& out, std::ostream& err);

}  // namespace allot::envs::deeptool
