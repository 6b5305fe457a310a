// The interface behind RLoT's per-step process reward (RLoT Sec. 3.2): a score in [0, 1] for
// each reasoning step of a chain. A PRM endpoint (prm_reward.h) and the tiny world's rule-based
// step verifier (envs/rlot/rule_step_verifier.h) both implement it, so the environment does
// not know which one scores its steps.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace allot::rewards {

class StepScorer {
 public:
  virtual ~StepScorer() = default;
  // One score per step that was scored, for the last steps of the chain (a PRM may drop the
  // earliest steps of a long chain); never empty on success. Errors are for failures to
  // compute (an endpoint down, a malformed reply), never for a wrong step, which scores low.
  // Thread-safe.
  virtual Result<std::vector<double>> StepScores(const std::string& question,
                                                 const std::vector<std::string>& steps) const = 0;
};

}  // namespace allot::rewards
