// The Grouped Search Strategy that labels D_alloc (R2-Reasoner Sec. 4.2, App. B.2 Eq. 6-10):
//
//   M_pool = G_SLM u G_MLM u G_LLM                                                  (Eq. 8)
//   M_A,0: every subtask on the medium model of the group its difficulty pairs with
//   Acc(M_A,j) = 1: move to smaller models within the group                        (Eq. 9)
//   Acc(M_A,j) = 0: move to larger models within the group                         (Eq. 9)
//                   and, once every subtask is at its group's largest model, across groups
//                   (Eq. 10)
//   stop after at most N_iter_alloc = 20 evaluations of Acc, or when Acc = 1 and no subtask
//   can move to a smaller model without breaking it.
//
// Downgrades go one subtask at a time, the one on the largest model first, so that a downgrade
// that breaks the answer is undone for that subtask alone (which then keeps its model); the
// escalation moves every subtask at once, as Eq. 9 reads. Acc is the caller's (execute the
// allocation and grade it), so the search itself is pure.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/config/schema.h"
#include "core/status.h"
#include "envs/r2/subtask_difficulty.h"

namespace allot::envs::r2 {

struct PoolModel {
  std::string name;
  std::string group;  // SLM, MLM or LLM
};

struct GroupedSearchConfig {
  int64_t max_iterations = 20;  // N_iter_alloc

  void Describe(config::Visitor& v) {
    v.Field("max_iterations", max_iterations,
            {.doc = "N_iter_alloc: evaluations of Acc(M_A) per task (App. B.2)", .min = 1});
  }
};

struct SearchStep {
  std::vector<std::string> allocation;
  bool correct = false;
};

struct SearchResult {
  std::vector<std::string> allocation;  // M_A*: the cheapest correct one, else the last tried
  bool correct = false;
  int64_t iterations = 0;  // evaluations of Acc
  std::vector<SearchStep> trace;
};

// Acc(M_A) for the models of each subtask, in order.
using AccuracyFn = std::function<Result<bool>(const std::vector<std::string>& allocation)>;

// `pool`: M_pool smallest first. An error of `accuracy` ends the search with that error.
Result<SearchResult> GroupedSearch(const std::vector<Difficulty>& difficulties,
                                   const std::vector<PoolModel>& pool, const AccuracyFn& accuracy,
                                   const GroupedSearchConfig& config);

}  // namespace allot::envs::r2
