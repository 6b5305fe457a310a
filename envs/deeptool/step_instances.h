// Step-wise decomposition (DeepTool Sec. 2.3.1, Eq. 5; notes.md): every step k of an expert
// trajectory becomes its own training instance whose context is the query and the
// ground-truth history (steps 1..k-1 with their observations) and whose target is step k.
// Supervising each step on the expert's history keeps one early deviation from spoiling the
// signal of every later step.
//
// An instance is a dataset item of the deeptool env (deeptool_env.h):
//   {"id": "<trajectory id>#<k>", "question", "answer", "step": k,
//    "history": [steps 1..k-1], "reference_steps": [step k]}
// plus the trajectory's other keys. A step MOSAIC corrupted on purpose (perturbation:
// intrinsic) stays in later histories, where it teaches recovery, but is never a target: its
// action is wrong by construction.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "envs/deeptool/expert_trajectory.h"

namespace allot::envs::deeptool {

struct StepInstanceOptions {
  bool skip_intrinsic_targets = true;
};

std::vector<nlohmann::json> ExpandStepInstances(const ExpertTrajectory& trajectory,
                                                const StepInstanceOptions& options = {});

struct StepInstanceStats {
  int64_t trajectories = 0;
  int64_t instances = 0;
  int64_t skipped_targets = 0;
};

// Reads expert trajectories (JSONL, expert_trajectory.h) and writes one instance per line.
// A bad line is an error naming <file>:<line> and the field.
Result<StepInstanceStats> WriteStepInstances(const std::string& in_path,
                                             const std::string& out_path,
                                             const StepInstanceOptions& options = {});

// The same instances as SFT records in the env's own text layout: {"id", "prompt": the TIR
// prompt rendered with the question, then the history with its observations, "completion":
// step k}. Observations are only ever prompt, so they carry no loss, and the cold start
// (Sec. 2.2) sees exactly the contexts the stepwise env builds.
struct SftLayout {
  std::string tir_template;  // {{question}}
  rewards::ActionRewardConfig tags;
  std::string observation_tag = "observation";
};
Result<std::vector<nlohmann::json>> StepSftRecords(const ExpertTrajectory& trajectory,
                                                   const SftLayout& layout,
                                                   const StepInstanceOptions& options = {});
Result<StepInstanceStats> WriteStepSftRecords(const std::string& in_path,
                                              const std::string& out_path, const SftLayout& layout,
                                              const StepInstanceOptions& options = {});

// Reads a JSONL file of expert trajectories; `where` errors name <file>:<line>.
Result<std::vector<ExpertTrajectory>> ReadExpertTrajectories(const std::string& path);

}  // namespace allot::envs::deeptool
