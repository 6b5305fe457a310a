// `allot eval` on an ATLAS recipe: ATLAS is an inference-time method (the page describes no
// training), so its recipe is an evaluation. Every problem is one episode; the report gives
// accuracy, explore calls used (mean and distribution, the page's Fig. 4) and cost, per method:
//   orchestrator  ATLAS: the orchestrator writes the final answer itself;
//   integrator    the ablation: a separate step synthesizes the candidate pool.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "datasets/example.h"
#include "datasets/jsonl_loader.h"
#include "envs/atlas/atlas_config.h"
#include "llm/accounting.h"

namespace allot {
class ProgressBar;
}  // namespace allot

namespace allot::envs::atlas {

class AtlasEnv;

// One problem's outcome, so that methods and runs can be compared problem by problem.
struct AtlasItemOutcome {
  std::string id;          // the example's id
  std::string difficulty;  // its "difficulty" field, when it has one
  bool correct = false;
  int64_t explore_calls = 0;
  std::string stopped;    // why the episode ended (final_answer, budget, ...); empty on a failure
  std::string failure;    // FailureReasonName when the episode failed
  double cost_usd = 0.0;  // every call of the episode
};

struct AtlasEvalReport {
  std::string method;
  int64_t problems = 0;
  int64_t correct = 0;
  int64_t failed = 0;  // episodes that ended with a failure (counted wrong)
  int64_t explore_calls = 0;
  std::map<int64_t, int64_t> calls_histogram;  // explore calls -> problems
  std::map<std::string, int64_t> stopped;      // why episodes ended (final_answer, budget, ...)
  llm::UsageReport usage;                      // every call, per endpoint
  int budget = 0;
  std::vector<AtlasItemOutcome> items;  // in the problems' order

  double accuracy() const { return problems > 0 ? static_cast<double>(correct) / problems : 0; }
  double mean_explore_calls() const {
    return problems > 0 ? static_cast<double>(explore_calls) / problems : 0;
  }
  std::string ToJson() const;  // one object, with every problem's outcome in "items"
};

// The dataset item an episode reads: {"question", "answer", "format"}.
std::string AtlasDatasetItem(const datasets::Example& example);

// One episode per problem (greedy orchestrator, per-problem seeds from `seed`); `progress`, when
// set, advances once per problem.
Result<AtlasEvalReport> EvaluateAtlas(AtlasEnv& env, const std::vector<datasets::Example>& problems,
                                      uint64_t seed, ProgressBar* progress = nullptr);

// The whole command: `methods` is "" (the recipe's finalize), "all" (both side by side), or a
// comma list of orchestrator, integrator; `limit` > 0 caps the problems. A relative
// atlas.prompts.dir is read beside `recipe_path` first. Prints a table, writes JSON when
// `json_path` is set; returns the exit code.
int RunAtlasEvalCommand(AtlasEnvConfig config, const datasets::DatasetConfig& data,
                        const std::string& methods, int64_t limit, uint64_t seed,
                        const std::string& recipe_path, const std::string& json_path,
                        std::ostream& out, std::ostream& err);

}  // namespace allot::envs::atlas
