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

}  // namespace allot::trainer::grpo
