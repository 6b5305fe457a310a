// Subtask difficulty for the grouped search (R2-Reasoner Sec. 4.2, App. B.2 Eq. 7; notes.md):
// p(t^i) is the alpha-quantile of the per-token probabilities exp(logprob) of a baseline
// model's answer to the subtask (alpha = 0.3, Sec. 5.2); p >= tau_easy is easy (SLM group),
// p <= tau_hard is hard (LLM group), anything between is medium (MLM group). The thresholds
// were tuned from 0.66 / 0.33 to 0.8 / 0.52 (notes.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config/schema.h"
#include "core/status.h"

namespace allot::envs::r2 {

enum class Difficulty { kEasy, kMedium, kHard };

struct DifficultyConfig {
  double alpha = 0.3;
  double tau_easy = 0.8;   // tau_diff1
  double tau_hard = 0.52;  // tau_diff2
  // The allocator writes difficulty on a 1..5 scale (notes.md); Eq. 7's three levels map to
  // these labels in its SFT targets.
  std::vector<int64_t> labels = {1, 3, 5};

  void Describe(config::Visitor& v) {
    v.Field("alpha", alpha, {.doc = "quantile of the token probabilities", .min = 0.0, .max = 1.0});
    v.Field("tau_easy", tau_easy, {.doc = "p >= tau_easy: easy (Eq. 7)", .min = 0.0, .max = 1.0});
    v.Field("tau_hard", tau_hard, {.doc = "p <= tau_hard: hard (Eq. 7)", .min = 0.0, .max = 1.0});
    v.Field("labels", labels, {.doc = "allocator difficulty labels of easy, medium, hard"});
  }
  Status Validate() const;
};

// The alpha-quantile of exp(logprobs), linearly interpolated between order statistics (the
// numpy default). InvalidArgument for no tokens or a positive / non-finite log-prob.
Result<double> AlphaQuantileProbability(const std::vector<float>& logprobs, double alpha);

// Eq. 7.
Difficulty ClassifyDifficulty(double p, const DifficultyConfig& config);

const char* DifficultyName(Difficulty d);
// The capability group a difficulty pairs with: easy -> SLM, medium -> MLM, hard -> LLM.
const char* GroupOf(Difficulty d);
int64_t DifficultyLabel(Difficulty d, const DifficultyConfig& config);

}  // namespace allot::envs::r2
