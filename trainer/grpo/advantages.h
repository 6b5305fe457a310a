// Group-relative advantages (GRPO) and step-level process advantages.
//
// Outcome supervision, CogER Sec. 3.4 (before Eq. 10) and R2-Reasoner Sec. 4.3: each output's
// reward is normalised within the group sampled for its prompt,
//   A_i = (r_i - mean(r)) / (std(r) + eps),
// with the sample std (n - 1), as TRL and verl compute it. Dr.GRPO (Liu et al., 2025) drops the
// division: A_i = r_i - mean(r).
//
// Process supervision (DeepSeekMath Sec. 4.1.3; DeepTool Eq. 9-11, notes.md: the per-step
// action-centric reward): every step reward of every output of the group is normalised by the
// mean and std over all steps of the group, and a token of step k gets the sum of the
// normalised rewards of steps >= k of its output.
//
// Plain C++ on doubles: the learner builds per-token advantage tensors from these.
#pragma once

#include <cstdint>
#include <vector>

namespace allot::trainer::grpo {

struct AdvantageOptions {
  bool normalize_std = true;  // false: Dr.GRPO
  double eps = 1e-4;
};

// Advantages for `rewards`, where `group[i]` names the group of output i (any integers; groups
// need not be contiguous). A group of one output gets advantage 0.
std::vector<double> GroupAdvantages(const std::vector<double>& rewards,
                                    const std::vector<int64_t>& group,
                                    const AdvantageOptions& options = {});

// Process advantages. `step_rewards[i]` are output i's per-step rewards (possibly empty).
// Returns, per output, the advantage of each step k (index k - 1): the return-to-go of the
// group-normalised step rewards. Outputs with no step rewards get an empty vector.
std::vector<std::vector<double>> StepAdvantages(
    const std::vector<std::vector<double>>& step_rewards, const std::vector<int64_t>& group,
    const AdvantageOptions& options = {});

// True when the rewards of every output in `members` are equal.
bool ZeroVarianceGroup(const std::vector<double>& rewards, double tolerance = 1e-12);

// True when one group carries no advantage signal: its outcome `rewards` (as GroupAdvantages
// gets them, after every shaping) are all equal, and its `step_rewards` pooled over the outputs
// (as StepAdvantages gets them; empty when step advantages are off) are all equal too. Every
// token of such a group then has advantage 0 and no policy gradient; DAPO's dynamic sampling
// drops it. A group whose outcome is constant but whose step rewards differ (DeepTool's
// step-wise instances, outcome 0) is not flat.
bool FlatGroup(const std::vector<double>& rewards,
               const std::vector<std::vector<double>>& step_rewards, double tolerance = 1e-12);

}  // namespace allot::trainer::grpo
