#include "rewards/action_reward.h"

#include <gtest/gtest.h>

#include "rewards/gestalt.h"

namespace allot::rewards {
namespace {

// Expected values from Python's difflib.SequenceMatcher(None, a, b, autojunk=False).
TEST(GestaltTest, MatchesDifflib) {
  struct Case {
    const char* a;
    const char* b;
    size_t matches;
    double ratio;
  } cases[] = {
      {"abcd", "bcde", 3, 0.75},
      {"print(1+2)", "print(1 + 2)", 10, 0.9090909090909091},
      {"x = solve(eq)", "y = solve(eq, x)", 12, 0.8275862068965517},
      {"The quick brown fox", "The quick brown dog jumps", 17, 0.7727272727272727},
      {"abc", "", 0, 0.0},
      {"aaaa", "aa", 2, 0.6666666666666666},
      {"import math\nprint(math.sqrt(2))", "import numpy as np\nprint(np.sqrt(2))", 25,
       0.746268656716418},
      {"GAATTCAGTTA", "GGATCGA", 5, 0.5555555555555556},
      {"hello world", "world hello", 5, 0.45454545454545453},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(GestaltMatches(c.a, c.b), c.matches) << c.a << " | " << c.b;
    EXPECT_DOUBLE_EQ(GestaltSimilarity(c.a, c.b), c.ratio) << c.a << " | " << c.b;
  }
  EXPECT_DOUBLE_EQ(GestaltSimilarity("", ""), 1.0);
  EXPECT_DOUBLE_EQ(GestaltSimilarity("same", "same"), 1.0);
}

// difflib compares str, that is code points; the byte ratios differ (0.75, 0.8, 0.889).
TEST(GestaltTest, ComparesCodePointsNotBytes) {
  struct Case {
    const char* a;
    const char* b;
    size_t matches;
    double ratio;
  } cases[] = {
      {"h\u00e9llo w\u00f6rld", "hello world", 9, 0.8181818181818182},
      {"ab\u20ac", "a\u20acb", 2, 0.6666666666666666},
      {"x = \u00aba\u00bb", "x = \u00abb\u00bb", 6, 0.8571428571428571},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(GestaltMatches(c.a, c.b), c.matches) << c.a << " | " << c.b;
    EXPECT_DOUBLE_EQ(GestaltSimilarity(c.a, c.b), c.ratio) << c.a << " | " << c.b;
  }
  // A byte that is not UTF-8 is a character of its own and matches only itself.
  EXPECT_EQ(DecodeCodePoints("a\xff\xc3").size(), 3u);
  EXPECT_EQ(GestaltMatches("a\xff", "a\xfe"), 1u);
  EXPECT_DOUBLE_EQ(GestaltSimilarity("\xff", "\xff"), 1.0);
}

// max_action_chars counts characters: three bytes would be "a\u00e9" on both sides (ratio 1).
TEST(ActionRewardTest, ActionCapCountsCharacters) {
  ActionRewardConfig config;
  config.max_action_chars = 3;
  ActionCentricReward reward(config);
  RewardInput in;
  in.reference_step = "<think>t</think><code>a\u00e9b and more</code>";
  in.response = "<think>t</think><code>a\u00e9c and more</code>";
  Result<double> r = reward.Compute(in);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_DOUBLE_EQ(*r, 2.0 * 2 / 6);  // "a\u00e9b" vs "a\u00e9c"
}

TEST(ActionRewardTest, ParseToolStep) {
  Result<ToolStep> s = ParseToolStep("<think>add</think>\n<code>print(1+2)</code>");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->think, "add");
  EXPECT_EQ(s->action, "print(1+2)");
  EXPECT_FALSE(s->terminal);
  Result<ToolStep> t = ParseToolStep("<think>done</think><answer>\\boxed{3}</answer>");
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(t->terminal);
  for (const char* bad :
       {"", "<code>x</code>", "<think>a</think>", "<think>a</think>tail",
        "<think>a</think><code>x</code>tail", "<think>a<code>x</code>", "<think>a</think><code>x",
        "<think>a</think><code></code>", "<think>a</think><code>x</code><code>y</code>",
        "pre<think>a</think><code>x</code>"}) {
    EXPECT_FALSE(ParseToolStep(bad).ok()) << bad;
  }
}

TEST(ActionRewardTest, GateTimesSimilarityOfActionsOnly) {
  ActionCentricReward r;
  RewardInput in;
  in.reference_step = "<think>Use the calculator.</think><code>print(1+2)</code>";
  // A different thought does not matter; the action is compared.
  in.response = "<think>Completely different reasoning here.</think><code>print(1 + 2)</code>";
  EXPECT_DOUBLE_EQ(*r.Compute(in), 0.9090909090909091);
  in.response = "<think>x</think><code>print(1+2)</code>";
  EXPECT_DOUBLE_EQ(*r.Compute(in), 1.0);
  // Gate: malformed output or the wrong phase scores 0 whatever the action.
  in.response = "<code>print(1+2)</code>";
  EXPECT_EQ(*r.Compute(in), 0.0);
  in.response = "<think>x</think><answer>print(1+2)</answer>";
  EXPECT_EQ(*r.Compute(in), 0.0);
  // A bad reference is bad data, an error.
  in.reference_step = "no tags";
  EXPECT_FALSE(r.Compute(in).ok());
}

TEST(ActionRewardTest, LongActionsAreBounded) {
  ActionRewardConfig c;
  c.max_action_chars = 1000;
  ActionCentricReward r(c);
  RewardInput in;
  in.reference_step = "<think>t</think><code>" + std::string(200000, 'a') + "</code>";
  in.response = "<think>t</think><code>" + std::string(200000, 'b') + "</code>";
  EXPECT_EQ(*r.Compute(in), 0.0);
}

}  // namespace
}  // namespace allot::rewards
