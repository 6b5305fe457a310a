#include "trainer/grpo/overlong_shaping.h"

#include <algorithm>

namespace allot::trainer::grpo {

double OverlongPenalty(int64_t length, const OverlongOptions& options) {
  if (options.buffer <= 0) return 0.0;
  const int64_t start = options.max_tokens - options.buffer;
  if (length <= start) return 0.0;
  if (length > options.max_tokens) return -options.penalty;
  const double ramp = static_cast<double>(start - length) / static_cast<double>(options.buffer);
  return options.penalty * std::max(-1.0, ramp);
}

double EpisodeOverlongPenalty(const std::vector<PolicyTurn>& turns,
                              const OverlongOptions& options) {
  if (options.buffer <= 0) return 0.0;
  double worst = 0.0;
  for (const PolicyTurn& turn : turns) {
    OverlongOptions o = options;
    if (turn.budget > 0) o.max_tokens = turn.budget;
    o.buffer = std::min(options.buffer, std::max<int64_t>(o.max_tokens, 1));
    worst = std::min(worst, OverlongPenalty(turn.tokens, o));
  }
  return worst;
}

}  // namespace allot::trainer::grpo
