// Decomposition scoring and best-of-m selection for D_decomp (R2-Reasoner Sec. 4.1, App. B.1):
//
//   Practicality(d) = sum_i Tokens(t^i, M_eval)                                   (Eq. 2)
//   Score(d) = w_c k + w_p sum_i Tokens(t^i, M_eval) + w_d Coe_pair(d)             (Eq. 3)
//   Coe_pair(d) = A / (k - 1), A = adjacent subtask pairs with no logical link
//   d* = argmin over {d : C(d) = 1} of Score(d) if any C(d) = 1, else argmin Score (Eq. 4)
//
// Lower scores are better. w_c = 100, w_p = 1, w_d = 1000 (Sec. 5.2) put the paper's average
// components (5.87 subtasks, 676.59 tokens, 0.1541 coherence) on one scale.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/config/schema.h"

namespace allot::envs::r2 {

struct DecompositionWeights {
  double w_c = 100.0;   // conciseness: per subtask
  double w_p = 1.0;     // practicality: per token of M_eval
  double w_d = 1000.0;  // coherence: per unit of Coe_pair

  void Describe(config::Visitor& v) {
    v.Field("w_c", w_c, {.doc = "weight of the number of subtasks (Eq. 3)", .min = 0.0});
    v.Field("w_p", w_p, {.doc = "weight of M_eval's tokens over all subtasks (Eq. 3)", .min = 0.0});
    v.Field("w_d", w_d, {.doc = "weight of the incoherent-pair ratio (Eq. 3)", .min = 0.0});
  }
};

// One candidate decomposition d with what M_eval measured on it.
struct DecompositionCandidate {
  std::vector<std::string> subtasks;
  int64_t tokens = 0;            // Eq. 2: M_eval's tokens over all subtasks
  int64_t incoherent_pairs = 0;  // A: adjacent pairs without a meaningful connection
  bool correct = false;          // C(d)
};

// Coe_pair(d) = A / (k - 1); 0 for a single subtask (it has no adjacent pair).
double CoherencePairRatio(int64_t incoherent_pairs, size_t k);

// Eq. 3.
double DecompositionScore(const DecompositionCandidate& d, const DecompositionWeights& w);

// Eq. 4: the index of d*, preferring correct candidates; ties go to the earlier candidate.
// nullopt for no candidates.
std::optional<size_t> SelectDecomposition(const std::vector<DecompositionCandidate>& candidates,
                                          const DecompositionWeights& w);

}  // namespace allot::envs::r2
