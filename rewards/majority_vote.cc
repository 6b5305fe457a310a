#include "rewards/majority_vote.h"

#include <random>

namespace allot::rewards {
namespace {

struct Group {
  std::string representative;
  int index = 0;
  int votes = 0;
};

std::vector<Group> Groups(const std::vector<std::string>& answers,
                          const EquivalenceOptions& options) {
  std::vector<Group> groups;
  for (size_t i = 0; i < answers.size(); ++i) {
    const std::string& a = answers[i];
    if (a.empty()) continue;
    bool joined = false;
    for (Group& g : groups) {
      if (AnswersEquivalent(a, g.representative, options).equivalent) {
        ++g.votes;
        joined = true;
        break;
      }
    }
    if (!joined) groups.push_back({a, static_cast<int>(i), 1});
  }
  return groups;
}

// `pick` chooses among the tied winners (in first-seen order).
VoteResult Decide(const std::vector<Group>& groups, size_t pick_seed, bool seeded) {
  VoteResult r;
  r.num_groups = static_cast<int>(groups.size());
  std::vector<const Group*> best;
  for (const Group& g : groups) {
    if (g.votes > r.votes) {
      r.votes = g.votes;
      best.clear();
    }
    if (g.votes == r.votes) best.push_back(&g);
  }
  if (best.empty()) return r;
  size_t k = 0;
  if (seeded && best.size() > 1) {
    std::mt19937_64 rng(pick_seed);
    k = std::uniform_int_distribution<size_t>(0, best.size() - 1)(rng);
  }
  r.found = true;
  r.answer = best[k]->representative;
  r.index = best[k]->index;
  r.tied_groups = static_cast<int>(best.size());
  return r;
}

}  // namespace

VoteResult MajorityVote(const std::vector<std::string>& answers,
                        const EquivalenceOptions& options) {
  return Decide(Groups(answers, options), 0, /*seeded=*/false);
}

VoteResult MajorityVoteSeeded(const std::vector<std::string>& answers, uint64_t tie_seed,
                              const EquivalenceOptions& options) {
  return Decide(Groups(answers, options), tie_seed, /*seeded=*/true);
}

}  // namespace allot::rewards
