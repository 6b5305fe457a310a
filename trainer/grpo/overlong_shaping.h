// DAPO's soft overlong punishment (Yu et al., 2025, Eq. 13): with L_max the generation budget
// and L_cache the punishment window,
//   R_length(y) = 0                                  |y| <= L_max - L_cache
//               = ((L_max - L_cache) - |y|) / L_cache  L_max - L_cache < |y| <= L_max
//               = -1                                 L_max < |y|
// scaled by `penalty` and added to the task reward.
//
// Multi-turn episodes (R2's two roles, DeepTool's interleaved steps, ATLAS's orchestrator, a
// CoTool chain) are shaped per generated turn: L_max is the budget that turn was sampled under,
// not the episode's length summed over turns, which would punish an episode for having turns.
#pragma once

#include <cstdint>
#include <vector>

namespace allot::trainer::grpo {

struct OverlongOptions {
  int64_t max_tokens = 0;  // L_max
  int64_t buffer = 0;      // L_cache; 0 switches the shaping off
  double penalty = 1.0;
};

// The (non-positive) length reward for a completion of `length` policy tokens.
double OverlongPenalty(int64_t length, const OverlongOptions& options);

// One generated policy turn: its length and the max_tokens it was sampled under (0: unknown).
struct PolicyTurn {
  int64_t tokens = 0;
  int64_t budget = 0;
};

// The episode's length reward: each turn is scored by OverlongPenalty against its own budget
// (`options.max_tokens` for a turn that records none), the window being the last
// `options.buffer` tokens of that budget (all of it when the budget is shorter). The episode
// takes its worst turn's
// penalty, not the sum or the mean: DAPO punishes a response for being truncated, and one
// truncated turn already makes the episode's outcome a truncated one; the result stays within
// DAPO's [-penalty, 0] however many turns an episode has, so the term never outweighs the
// task reward because an episode took more turns, and a runaway turn is not diluted by short
// ones (the outcome advantage reaches every turn's tokens alike). No turns: 0.
double EpisodeOverlongPenalty(const std::vector<PolicyTurn>& turns, const OverlongOptions& options);

}  // namespace allot::trainer::grpo
