#include "rewards/majority_vote.h"

namespace allot::rewards {

VoteResult MajorityVote(const std::vector<std::string>& answers,
                        const EquivalenceOptions& options) {
  struct Group {
    std::string representative;
    int votes = 0;
  };
  std::vector<Group> groups;
  for (const std::string& a : answers) {
    if (a.empty()) continue;
    bool joined = false;
    for (Group& g : groups) {
      if (AnswersEquivalent(a, g.representative, options).equivalent) {
        ++g.votes;
        joined = true;
        break;
      }
    }
    if (!joined) groups.push_back({a, 1});
  }
  VoteResult r;
  r.num_groups = static_cast<int>(groups.size());
  for (const Group& g : groups) {
    if (g.votes > r.votes) {
      r.found = true;
      r.answer = g.representative;
      r.votes = g.votes;
    }
  }
  return r;
}

}  // namespace allot::rewards
