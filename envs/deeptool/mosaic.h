// MOSAIC's adversarial perturbation operator for data synthesis (DeepTool Sec. 2.1, Eq. 3-4,
// Algorithm 1; notes.md), applied to expert trajectories: each intermediate code step is
// perturbed with probability p (App. A.1: 0.1 for SFT data, Table 3; 0.2 for RL data, Table 4)
// in one of two ways:
//   intrinsic (Eq. 3): the action is corrupted (a syntax error, a misspelt name, a broken
//     indent) and the observation is the traceback the sandbox returns when it is run;
//   extrinsic (Eq. 4): the action is kept but the environment answers with a failure such as
//     a timeout.
// The perturbed step is inserted before the original one, which follows as the recovery (its
// thought opens with a short note on the failure), so that the trajectory teaches
// self-correction instead of ending at the error.
//
// Seeded and deterministic: whether and how step k of trajectory i is perturbed depends only on
// (seed, i, k), never on the order of calls or on other trajectories.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "envs/deeptool/expert_trajectory.h"

namespace allot::envs::deeptool {

inline constexpr double kMosaicSftProbability = 0.1;  // DeepTool App. A.1, Table 3
inline constexpr double kMosaicRlProbability = 0.2;   // DeepTool App. A.1, Table 4

struct MosaicConfig {
  double probability = kMosaicSftProbability;  // per intermediate step
  double intrinsic_share = 0.5;                // the rest is extrinsic
  uint64_t seed = 42;
  // Extrinsic failures the environment returns (Eq. 4), one picked per perturbed step.
  std::vector<std::string> extrinsic_failures = {
      "TimeoutError: the program did not finish within the sandbox's time limit",
      "MemoryError: the sandbox ran out of memory before the program finished",
      "ConnectionError: the code interpreter did not respond; the run was lost",
  };
  // Opening sentence of the recovery step's thought.
  std::string intrinsic_note = "The previous code failed with an error; I fix it and run it again.";
  std::string extrinsic_note =
      "The previous run failed because of the environment, not the code; I run it again.";
};

// What running a program gave: ok when it exited 0 in time; the observation text otherwise
// holds the traceback.
struct CodeOutcome {
  bool ok = false;
  std::string observation;
};
using CodeRunner = std::function<Result<CodeOutcome>(const std::string& code)>;

struct MosaicStats {
  int64_t trajectories = 0;
  int64_t code_steps = 0;  // intermediate steps that could be perturbed
  int64_t intrinsic = 0;
  int64_t extrinsic = 0;
};

// The corrupted versions of `code` that Perturb tries, in the order a seeded draw `r` puts
// them; the last always fails to parse.
std::vector<std::string> CorruptedCandidates(const std::string& code, uint64_t r);

// Perturbs trajectory number `index` of its file. Intrinsic perturbations run the corrupted
// code with `run` and keep the first candidate that fails (a runner error fails the call).
Result<ExpertTrajectory> Perturb(const ExpertTrajectory& trajectory, uint64_t index,
                                 const MosaicConfig& config, const CodeRunner& run,
                                 MosaicStats* stats = nullptr);

// JSONL in, JSONL out (expert_trajectory.h).
Result<MosaicStats> WritePerturbed(const std::string& in_path, const std::string& out_path,
                                   const MosaicConfig& config, const CodeRunner& run);

}  // namespace allot::envs::deeptool
