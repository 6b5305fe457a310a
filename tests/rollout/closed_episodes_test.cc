#include "rollout/closed_episodes.h"

#include <gtest/gtest.h>
#include <malloc.h>

#include <string>

namespace allot::rollout {
namespace {

// Bytes the C heap has handed out (glibc).
size_t HeapInUse() { return mallinfo2().uordblks; }

TEST(ClosedEpisodesTest, ForgetsTheOldestBeyondCapacity) {
  ClosedEpisodes closed(3);
  for (const char* id : {"a", "b", "c", "b", "d"}) closed.Insert(id);
  EXPECT_EQ(closed.size(), 3u);
  EXPECT_FALSE(closed.Contains("a"));
  EXPECT_TRUE(closed.Contains("b"));
  EXPECT_TRUE(closed.Contains("d"));
  ClosedEpisodes none(0);
  none.Insert("a");
  EXPECT_FALSE(none.Contains("a"));
  EXPECT_EQ(none.size(), 0u);
}

// The dispatcher's ledger used to keep every closed episode for the whole run: a million
// episodes must fit in the memory of `capacity` ids, not a million.
TEST(ClosedEpisodesTest, AMillionEpisodesStayWithinFixedMemory) {
  constexpr size_t kCapacity = 4096;
  ClosedEpisodes closed(kCapacity);
  // Ids as the DQN trainer makes them (longer than the small-string buffer: heap allocated).
  const auto id = [](size_t i) { return "dqn-1234567890-0-" + std::to_string(i); };
  for (size_t i = 0; i < kCapacity; ++i) closed.Insert(id(i));
  const size_t full = HeapInUse();
  for (size_t i = kCapacity; i < 1000000; ++i) closed.Insert(id(i));
  const size_t after = HeapInUse();
  EXPECT_EQ(closed.size(), kCapacity);
  EXPECT_TRUE(closed.Contains(id(999999)));
  EXPECT_FALSE(closed.Contains(id(999999 - kCapacity)));
  // A million remembered ids would take > 50 MB; allow a little slack for the deque's blocks.
  EXPECT_LT(after, full + (1u << 20)) << "heap grew from " << full << " to " << after;
}

}  // namespace
}  // namespace allot::rollout
