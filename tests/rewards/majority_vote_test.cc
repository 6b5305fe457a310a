#include "rewards/majority_vote.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace allot::rewards
