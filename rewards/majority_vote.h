// Self-consistency voting: the majority over answers that are mathematically equivalent
// (RLoT's inference-time voting over trails; notes.md). Answers are grouped with
// AnswersEquivalent, so "0.5", "\frac{1}{2}" and "1/2" count as one vote.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rewards/answer_equivalence.h"

namespace allot::rewards {

struct VoteResult {
  bool found = false;   // false when no candidate had an answer
  std::string answer;   // the first-seen member of the winning group
  int votes = 0;        // size of the winning group
  int num_groups = 0;   // distinct answers
  int index = -1;       // position of `answer` in the input
  int tied_groups = 0;  // groups with the winning number of votes (1: a clear majority)
};

// Empty strings are abstentions. Ties go to the group seen first, so the result is
// deterministic. Quadratic in the number of distinct answers (trails are few).
VoteResult MajorityVote(const std::vector<std::string>& answers,
                        const EquivalenceOptions& options = {});

// The same vote with ties between the largest groups broken uniformly at random from
// `tie_seed` (RLoT's self-consistency at inference): the same seed repeats the choice.
VoteResult MajorityVoteSeeded(const std::vector<std::string>& answers, uint64_t tie_seed,
                              const EquivalenceOptions& options = {});

}  // namespace allot::rewards
