#include "rewards/majority_vote.h"

#include <gtest/gtest.h>

#include <set>

namespace allot::rewards {
namespace {

TEST(MajorityVoteTest, GroupsEquivalentAnswers) {
  VoteResult r = MajorityVote({"3", "\\frac{1}{2}", "0.5", "1/2", "3"});
  ASSERT_TRUE(r.found);
  EXPECT_EQ(r.answer, "\\frac{1}{2}");
  EXPECT_EQ(r.votes, 3);
  EXPECT_EQ(r.num_groups, 2);
}

TEST(MajorityVoteTest, TiesGoToTheFirstGroupAndEmptyAbstains) {
  VoteResult r = MajorityVote({"", "7", "8", ""});
  EXPECT_EQ(r.answer, "7");
  EXPECT_EQ(r.votes, 1);
  EXPECT_FALSE(MajorityVote({"", ""}).found);
  EXPECT_FALSE(MajorityVote({}).found);
}

TEST(MajorityVoteTest, SeededTiesPickEveryTiedGroupAndRepeat) {
  const std::vector<std::string> answers = {"7", "0.5", "8", "1/2", "7", "8"};  // 2-2-2
  std::set<std::string> winners;
  for (uint64_t seed = 0; seed < 64; ++seed) {
    VoteResult r = MajorityVoteSeeded(answers, seed);
    ASSERT_TRUE(r.found);
    EXPECT_EQ(r.votes, 2);
    EXPECT_EQ(r.tied_groups, 3);
    EXPECT_EQ(answers[static_cast<size_t>(r.index)], r.answer);
    EXPECT_EQ(MajorityVoteSeeded(answers, seed).answer, r.answer);  // same seed, same pick
    winners.insert(r.answer);
  }
  EXPECT_EQ(winners, (std::set<std::string>{"7", "0.5", "8"}));
  // A clear majority is never overruled by the seed.
  for (uint64_t seed = 0; seed < 16; ++seed) {
    VoteResult r = MajorityVoteSeeded({"3", "\\frac{1}{2}", "0.5"}, seed);
    EXPECT_EQ(r.answer, "\\frac{1}{2}");
    EXPECT_EQ(r.index, 1);
    EXPECT_EQ(r.tied_groups, 1);
  }
  EXPECT_FALSE(MajorityVoteSeeded({"", ""}, 1).found);
}

}  // namespace
}  // namespace allot::rewards
