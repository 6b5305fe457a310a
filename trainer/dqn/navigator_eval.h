// `allot eval` for the navigator: RLoT's inference procedure (Section 4.1, Table 21) over the
// episodes of an env: the greedy navigator chooses the logic blocks, each problem is solved
// `trails` times, and self-consistency (majority over equivalent answers) picks the answer.
// The report also counts the block patterns the navigator uses (RLoT Table 5).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "datasets/example.h"
#include "envs/rlot/rlot_config.h"
#include "envs/synthetic/chain_mdp.h"
#include "models/navigator_mlp.h"
#include "rewards/majority_vote.h"

namespace allot::trainer {

struct NavigatorEvalOptions {
  int episodes = 100;    // problems
  int trails = 3;        // RLoT Table 21: "number of trails for self-consistency"
  double epsilon = 0.0;  // 0: greedy (RLoT's inference); > 0 perturbs trails for robustness studies
  uint64_t seed = 0;
  int top_patterns = 2;  // per pattern length, as in RLoT Table 5
};

struct NavigatorEvalReport {
  int episodes = 0;
  int trails = 0;
  double mean_return = 0;     // over all trails
  double optimal_return = 0;  // the env's best return
  double trail_accuracy = 0;  // trails that reached the correct answer
  double voted_accuracy = 0;  // problems whose self-consistent answer is correct
  double mean_steps = 0;
  std::array<int64_t, 5> action_histogram{};
  // Non-terminal block sequences ("Reason-Refine") by length, over all trails.
  std::map<int, std::map<std::string, int64_t>> patterns;
};

// Self-consistency (RLoT Section 4.1; Wang et al. 2023): runs trail(0..trails-1) and returns
// the majority over mathematically equivalent answers (rewards::MajorityVote; ties go to the
// first-seen group). Empty answers abstain.
rewards::VoteResult SelfConsistentAnswer(int trails, const std::function<std::string(int)>& trail,
                                         const rewards::EquivalenceOptions& options = {});

// "Decompose-Reason-Refine" for applied actions (Terminate dropped).
std::string BlockPattern(const std::vector<int>& actions);

// Evaluates `navigator` on the chain MDP. A trail's answer is its block sequence (the chain's
// only "solution" is the rewarded sequence), encoded as digits action+1 so that answer
// equivalence compares sequences exactly.
NavigatorEvalReport EvaluateNavigatorOnChain(const models::NavigatorMlp& navigator,
                                             const envs::ChainMdpConfig& env,
                                             const NavigatorEvalOptions& options);

// The report as text, with a Table-5-style block of major patterns.
std::string FormatEvalReport(const NavigatorEvalReport& report);
std::string EvalReportJson(const NavigatorEvalReport& report);

// The CLI entry point: loads the navigator (anything LoadNavigatorWeights accepts), evaluates
// it on the chain env, prints the report, writes it as JSON to `json_out` when non-empty.
// Returns the exit code (0 ok, 1 error).
int RunNavigatorEval(const std::string& run_dir_or_checkpoint, const envs::ChainMdpConfig& env,
                     const NavigatorEvalOptions& options, const std::string& json_out = "");

// `allot eval` on an rlot recipe (RLoT Sec. 4.1): every problem is solved `trails` times by the
// LLM env and voted by equivalent answers, ties broken by `options.seed`. `method` is
// "navigator" (the greedy navigator of `run_dir_or_checkpoint`, `options.epsilon` > 0 perturbs
// it), "direct" (answer at once), "fixed:<block>-<block>..." (a fixed block sequence, e.g.
// fixed:reason-reason-refine), or the CoT baselines "cot" and "cot-sc" (rlot_eval.h). `env` is complete (rlot_recipe.h). Returns the exit code.
int RunRlotEval(const std::string& run_dir_or_checkpoint, const envs::rlot::RlotEnvConfig& env,
                const std::vector<datasets::Example>& problems, const NavigatorEvalOptions& options,
                const std::string& method, const std::string& json_out = "");

}  // namespace allot::trainer
