// DAPO's soft overlong punishment (Yu et al., 2025, Eq. 13): with L_max the generation budget
// and L_cache the punishment window,
//   R_length(y) = 0                                  |y| <= L_max - L_cache
//               = ((L_max - L_cache) - |y|) / L_cache  L_max - L_cache < |y| <= L_max
//               = -1                                 L_max < |y|
// scaled by `penalty` and added to the task reward.
#pragma once

#include <cstdint>

namespace allot::trainer::grpo {

struct OverlongOptions {
  int64_t max_tokens = 0;  // L_max
  int64_t buffer = 0;      // L_cache; 0 switches the shaping off
  double penalty = 1.0;
};

// The (non-positive) length reward for a completion of `length` policy tokens.
double OverlongPenalty(int64_t length, const OverlongOptions& options);

}  // namespace allot::trainer::grpo
