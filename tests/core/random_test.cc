#include "core/random.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace allot {
namespace {

// Outputs of the generator's earlier copies (the trainers' episode seeds, the evaluations', the
// datasets' and the tiny world's), computed from that code: a change here changes what a resumed
// run, a dataset shuffle or the tiny world's data draws.

TEST(RandomTest, NextMatchesTheReferenceSequence) {
  // Seed 0: the first outputs of Vigna's splitmix64.c.
  SplitMix64 zero(0);
  EXPECT_EQ(zero.Next(), 0xe220a8397b1dcdafull);
  EXPECT_EQ(zero.Next(), 0x6e789e6aa1b965f4ull);
  EXPECT_EQ(zero.Next(), 0x06c45d188009454full);
  SplitMix64 r(42);
  EXPECT_EQ(r.Next(), 0xbdd732262feb6e95ull);
  EXPECT_EQ(r.Next(), 0x28efe333b266f103ull);
  EXPECT_EQ(r.Next(), 0x47526757130f9f52ull);
}

TEST(RandomTest, DrawIsTheNthOutputOfTheStream) {
  EXPECT_EQ(SplitMix64Draw(42, 0), 0xbdd732262feb6e95ull);
  EXPECT_EQ(SplitMix64Draw(42, 1), 0x28efe333b266f103ull);
  EXPECT_EQ(SplitMix64Draw(42, 2), 0x47526757130f9f52ull);
  EXPECT_EQ(SplitMix64Draw(7, 1000), 0xcf1b8d545d1615caull);
  SplitMix64 r(7);
  for (uint64_t n = 0; n < 50; ++n) EXPECT_EQ(SplitMix64Draw(7, n), r.Next()) << n;
}

TEST(RandomTest, HashDerivesSeedsAsBefore) {
  EXPECT_EQ(SplitMix64Hash(0), 0xe220a8397b1dcdafull);
  EXPECT_EQ(SplitMix64Hash(1), 0x910a2dec89025cc1ull);
  EXPECT_EQ(SplitMix64Hash(42), 0xbdd732262feb6e95ull);
  // GRPO's dropout seed for run seed 42, step 3, and a MOSAIC draw (seed 7, trajectory 2,
  // step 3, purpose 1), as those files compose it.
  EXPECT_EQ(SplitMix64Hash(42 ^ SplitMix64Hash(3 + 0x5EED)), 0x88ab9279376261a1ull);
  EXPECT_EQ(SplitMix64Hash(SplitMix64Hash(SplitMix64Hash(SplitMix64Hash(7) ^ 2) ^ 3) ^ 1),
            0x39ac3deee9a9561aull);
}

TEST(RandomTest, ByteHashKeepsItsOffsetBasis) {
  EXPECT_EQ(ByteHash64(""), 1469598103934665603ull);
  EXPECT_EQ(ByteHash64("a"), 0x44bd8ad473cd9906ull);
  EXPECT_EQ(ByteHash64("foobar"), 0x88fad7c0a8ff07f2ull);
}

TEST(RandomTest, BoundedDrawsMatchTheEarlierCode) {
  SplitMix64 below(5);
  std::vector<uint64_t> b;
  for (int i = 0; i < 8; ++i) b.push_back(below.Below(10));
  EXPECT_EQ(b, (std::vector<uint64_t>{8, 4, 3, 9, 1, 6, 9, 5}));

  SplitMix64 range(9);
  std::vector<int64_t> r;
  for (int i = 0; i < 6; ++i) r.push_back(range.Range(-5, 5));
  EXPECT_EQ(r, (std::vector<int64_t>{-3, -1, -2, -1, -2, -5}));

  SplitMix64 percent(9);
  std::vector<bool> p;
  for (int i = 0; i < 10; ++i) p.push_back(percent.Percent(30));
  EXPECT_EQ(p,
            (std::vector<bool>{true, true, false, false, true, false, false, false, true, false}));

  SplitMix64 pick(1);
  const std::vector<std::string> names = {"a", "b", "c", "d"};
  std::string picked;
  for (int i = 0; i < 5; ++i) picked += pick.Pick(names);
  EXPECT_EQ(picked, "bdcdb");
}

TEST(RandomTest, ShuffleMatchesTheEarlierCode) {
  SplitMix64 r(11);
  std::vector<int> v = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  r.Shuffle(v);
  EXPECT_EQ(v, (std::vector<int>{1, 9, 8, 6, 7, 2, 0, 5, 4, 3}));
  // The dataset sampler's epoch 0 for seed 42 (datasets/sampler.cc's seed expression).
  SplitMix64 epoch(42 * kSplitMix64Gamma ^ 1 * 0xD1B54A32D192ED03ull);
  std::vector<int> w = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  epoch.Shuffle(w);
  EXPECT_EQ(w, (std::vector<int>{1, 9, 2, 3, 7, 8, 4, 5, 0, 6}));
}

TEST(RandomTest, BelowStaysInRangeAndForksDiffer) {
  SplitMix64 rng(3);
  std::set<uint64_t> seen;
  for (int i = 0; i < 2000; ++i) {
    const uint64_t x = rng.Below(7);
    ASSERT_LT(x, 7u);
    seen.insert(x);
  }
  EXPECT_EQ(seen.size(), 7u);
  EXPECT_NE(rng.Fork("a").Next(), rng.Fork("b").Next());
  EXPECT_EQ(rng.Fork("a").Next(), rng.Fork("a").Next());
}

TEST(RandomTest, ForkGivesNamedStreamsAndLeavesTheParent) {
  const SplitMix64 root(42);
  SplitMix64 knowledge = root.Fork("knowledge");
  EXPECT_EQ(knowledge.Next(), 0xe251844094c2c3b5ull);
  EXPECT_EQ(knowledge.Next(), 0x2df7dd7aaa3e4ef3ull);
  EXPECT_EQ(root.Fork("").Next(), 0xe369c8230e9a2b94ull);
  SplitMix64 copy = root;
  EXPECT_EQ(copy.Next(), 0xbdd732262feb6e95ull);
}

}  // namespace
}  // namespace allot
