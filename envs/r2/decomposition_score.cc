#include "envs/r2/decomposition_score.h"

namespace allot::envs::r2 {

double CoherencePairRatio(int64_t incoherent_pairs, size_t k) {
  if (k <= 1) return 0.0;
  return static_cast<double>(incoherent_pairs) / static_cast<double>(k - 1);
}

double DecompositionScore(const DecompositionCandidate& d, const DecompositionWeights& w) {
  const size_t k = d.subtasks.size();
  return w.w_c * static_cast<double>(k) + w.w_p * static_cast<double>(d.tokens) +
         w.w_d * CoherencePairRatio(d.incoherent_pairs, k);
}

std::optional<size_t> SelectDecomposition(const std::vector<DecompositionCandidate>& candidates,
                                          const DecompositionWeights& w) {
  bool any_correct = false;
  for (const auto& c : candidates) any_correct |= c.correct;
  std::optional<size_t> best;
  double best_score = 0.0;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (any_correct && !candidates[i].correct) continue;
    const double s = DecompositionScore(candidates[i], w);
    if (!best || s < best_score) {
      best = i;
      best_score = s;
    }
  }
  return best;
}

}  // namespace allot::envs::r2
