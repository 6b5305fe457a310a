// Self-consistency voting: the majority over answers that are mathematically equivalent
// (RLoT's inference-time voting over trails; notes.md). Answers are grouped with
// AnswersEquivalent, so "0.5", "\frac{1}{2}" and "1/2" count as one vote.
#pragma once

#include <string>
#include <vector>

#include "rewards/answer_equivalence.h"

namespace allot::rewards {

struct VoteResult {
  bool found = false;  // false when no candidate had an answer
  std::string answer;  // the first-seen member of the winning group
  int votes = 0;       // size of the winning group
  int num_groups = 0;  // distinct answers
};

// Empty strings are abstentions. Ties go to the group seen first, so the result is
// deterministic. Quadratic in the number of distinct answers (trails are few).
VoteResult MajorityVote(const std::vector<std::string>& answers,
                        const EquivalenceOptions& options = {});

}  // namespace allot::rewards
