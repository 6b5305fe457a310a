#include "envs/r2/subtask_difficulty.h"

#include <algorithm>
#include <cmath>

namespace allot::envs::r2 {

Status DifficultyConfig::Validate() const {
  if (tau_hard >= tau_easy) return InvalidArgument("difficulty.tau_hard: not below tau_easy");
  if (labels.size() != 3) {
    return InvalidArgument("difficulty.labels: 3 labels (easy, medium, hard) needed, got " +
                           std::to_string(labels.size()));
  }
  return Status::Ok();
}

Result<double> AlphaQuantileProbability(const std::vector<float>& logprobs, double alpha) {
  if (logprobs.empty()) return InvalidArgument("alpha-quantile: no token log-probs");
  if (!(alpha >= 0.0 && alpha <= 1.0)) return InvalidArgument("alpha-quantile: alpha not in [0,1]");
  std::vector<double> p;
  p.reserve(logprobs.size());
  for (size_t i = 0; i < logprobs.size(); ++i) {
    if (!std::isfinite(logprobs[i]) || logprobs[i] > 0.0f) {
      return InvalidArgument("alpha-quantile: token " + std::to_string(i) + " has log-prob " +
                             std::to_string(logprobs[i]));
    }
    p.push_back(std::exp(static_cast<double>(logprobs[i])));
  }
  std::sort(p.begin(), p.end());
  const double pos = alpha * static_cast<double>(p.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, p.size() - 1);
  return p[lo] + (pos - static_cast<double>(lo)) * (p[hi] - p[lo]);
}

Difficulty ClassifyDifficulty(double p, const DifficultyConfig& c) {
  if (p >= c.tau_easy) return Difficulty::kEasy;
  if (p <= c.tau_hard) return Difficulty::kHard;
  return Difficulty::kMedium;
}

const char* DifficultyName(Difficulty d) {
  switch (d) {
    case Difficulty::kEasy:
      return "easy";
    case Difficulty::kMedium:
      return "medium";
    case Difficulty::kHard:
      return "hard";
  }
  return "?";
}

const char* GroupOf(Difficulty d) {
  switch (d) {
    case Difficulty::kEasy:
      return "SLM";
    case Difficulty::kMedium:
      return "MLM";
    case Difficulty::kHard:
      return "LLM";
  }
  return "?";
}

int64_t DifficultyLabel(Difficulty d, const DifficultyConfig& c) {
  const size_t i = static_cast<size_t>(d);
  return i < c.labels.size() ? c.labels[i] : static_cast<int64_t>(2 * i + 1);
}

}  // namespace allot::envs::r2
