// RLoT inference over a dataset (RLoT Sec. 4.1, Table 21): each problem is solved `trails`
// times by the env with a block chooser (the greedy navigator, or a baseline), and
// self-consistency picks the answer: the majority over mathematically equivalent final answers,
// ties broken at random from the seed (rewards::MajorityVoteSeeded). Also the paper's
// fixed-policy baselines and the "hard problems" filter of its training data (notes.md).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "datasets/example.h"
#include "datasets/jsonl_loader.h"
#include "envs/rlot/rlot_env.h"
#include "llm/accounting.h"

namespace allot {
class ProgressBar;
}  // namespace allot

namespace allot::envs::rlot {

struct RlotEvalOptions {
  int trails = 3;     // RLoT Table 21: trails for self-consistency
  uint64_t seed = 0;  // trail seeds and vote ties
  // Counts the problems x trails to run, then each trail done (not owned); null: no progress.
  ProgressBar* progress = nullptr;
};

// One trail of one problem, kept so that a method's answers can be read and compared problem by
// problem (which items a block sequence wins that another loses).
struct RlotTrailRecord {
  std::string blocks;  // the applied blocks, "Reason-Reason-Terminate"
  std::string answer;  // the final answer; empty when the trail failed
  bool correct = false;
  std::string failure;  // "<reason>: <message>" when the trail failed
};

struct RlotProblemRecord {
  std::string id;
  std::string difficulty;  // the dataset's "difficulty" field when it has one (analysis only)
  bool voted_correct = false;
  std::vector<RlotTrailRecord> trails;
};

struct RlotEvalReport {
  std::string method;
  int problems = 0;
  int trails = 0;
  int64_t trail_total = 0;
  int64_t trail_correct = 0;
  int64_t failed_trails = 0;  // ended by a failure (their answers abstain)
  int64_t voted_correct = 0;
  int64_t tied_votes = 0;  // problems whose vote was decided by the seed
  double trail_accuracy() const {
    return trail_total > 0 ? static_cast<double>(trail_correct) / trail_total : 0.0;
  }
  double voted_accuracy() const {
    return problems > 0 ? static_cast<double>(voted_correct) / problems : 0.0;
  }
  int64_t blocks = 0;  // applied blocks over all trails, Terminate included
  std::array<int64_t, kNumLogicBlocks> actions{};
  // Non-terminal block patterns by length (RLoT Table 5).
  std::map<int, std::map<std::string, int64_t>> patterns;
  llm::UsageTotals usage;
  std::vector<RlotProblemRecord> items;  // in problem order

  std::string ToJson() const;
  std::string ToText() const;
};

// The dataset item an episode reads: {"question", "answer", "format"}.
std::string DatasetItem(const datasets::Example& example);

// A chooser for one trail; `seed` differs per trail. `reads_state` false: the chooser ignores
// the state (RlotEnv::RunWith).
struct ChooserFactory {
  std::function<BlockChooser(uint64_t seed)> make;
  bool reads_state = true;
  BlockChooser operator()(uint64_t seed) const { return make(seed); }
};

// The greedy (or epsilon-greedy) navigator.
ChooserFactory NavigatorChooser(std::shared_ptr<const models::NavigatorMlp> navigator,
                                double epsilon = 0.0);
// A fixed block sequence, then Terminate; {} is the "direct" baseline (answer at once).
ChooserFactory FixedChooser(std::vector<int> blocks);

Result<RlotEvalReport> EvaluateRlot(RlotEnv& env, const std::vector<datasets::Example>& problems,
                                    const ChooserFactory& chooser, const std::string& method,
                                    const RlotEvalOptions& options);

// One trail of a problem: an episode for `input` (its seed differs per trail).
using TrailRunner = std::function<Result<runtime::Trajectory>(const runtime::EpisodeInput&)>;

// The loop behind every method: `options.trails` trails per problem, each graded by its
// "outcome" reward, then voted over equivalent answers (info["answer"]), ties seeded.
Result<RlotEvalReport> EvaluateTrails(const std::vector<datasets::Example>& problems,
                                      const TrailRunner& run, const std::string& method,
                                      const RlotEvalOptions& options);

// The paper's single- and multi-round CoT baselines (RLoT Sec. 4.1, Table 2), next to direct
// and fixed blocks:
//   "cot"     zero-shot CoT, `options.trails` samples (trail accuracy is zero-shot CoT's);
//   "cot-sc"  CoT-SC: env.config().cot_sc_samples samples (RLoT: 4), majority over equivalent
//             answers, ties broken by the seed.
Result<RlotEvalReport> EvaluateChainOfThought(RlotEnv& env,
                                              const std::vector<datasets::Example>& problems,
                                              const std::string& method,
                                              const RlotEvalOptions& options);
bool IsChainOfThoughtMethod(const std::string& method);

// The problems the LLM gets wrong when asked directly (one Terminate-first episode each);
// failed episodes are neither kept nor dropped silently: they are counted in `failed`.
Result<std::vector<datasets::Example>> KeepHardProblems(RlotEnv& env,
                                                        const std::vector<datasets::Example>& all,
                                                        uint64_t seed, int64_t* failed = nullptr);

// The data tool: runs KeepHardProblems over the problems of `data` and writes their original
// JSONL lines (same fields, same preset) to `out_path`. Prints counts to `out`; returns the
// exit code (0 ok, 1 error).
int RunKeepHardCommand(RlotEnv& env, const datasets::DatasetConfig& data,
                       const std::string& out_path, uint64_t seed, std::ostream& out,
                       std::ostream& err);

}  // namespace allot::envs::rlot
