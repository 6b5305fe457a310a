#include "core/constant_time.h"

#include <gtest/gtest.h>

namespace allot {
namespace {

TEST(ConstantTimeTest, EqualOnlyWhenEveryByteAndTheLengthMatch) {
  EXPECT_TRUE(ConstantTimeEquals("Bearer abc", "Bearer abc"));
  EXPECT_TRUE(ConstantTimeEquals("", ""));
  EXPECT_FALSE(ConstantTimeEquals("Bearer abd", "Bearer abc"));
  EXPECT_FALSE(ConstantTimeEquals("Bearer ab", "Bearer abc"));    // a prefix of the secret
  EXPECT_FALSE(ConstantTimeEquals("Bearer abcd", "Bearer abc"));  // the secret is a prefix
  EXPECT_FALSE(ConstantTimeEquals(std::string_view("Bearer abc\0", 11), "Bearer abc"));
  EXPECT_FALSE(ConstantTimeEquals("", "x"));
  EXPECT_FALSE(ConstantTimeEquals("x", ""));
}

}  // namespace
}  // namespace allot
