// Arithmetic of graded difficulty for the tiny world: one-digit sums up to products
// a calculator should do, and short multi-step word problems. Each bucket has a fixed minimal
// CogER level by construction (TaskItem::min_level).
//
//   bucket  example                          level  reference solution
//   add1    What is 7 + 5?                   L1     one step
//   add2    What is 47 + 38?                 L2     tens, then ones
//   mul21   What is 47 * 6?                  L2     tens and ones times the digit, then the sum
//   mul22   What is 47 * 36?                 L3     times the tens, times the ones, the sum
//   word    Two- and three-step stories      L3     one step per operation
//   mul33   What is 472 * 358?               L4     the calculator tool
//   long    What is a + b + ... + g, where       L2     one step per letter: 6 to 8 easy steps
//           a = 3, b = 1, ..., g = 5?
//
// "long" is not among ArithmeticBuckets(): its items go to files of their own (long_train.jsonl,
// long_test.jsonl) for RLoT's logic-block model, so the pool's data keep their bytes.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/random.h"
#include "core/status.h"
#include "tinyworld/task_item.h"

namespace allot::tinyworld {

inline constexpr std::string_view kLongBucket = "long";

// The buckets above but "long", easiest first.
std::vector<std::string> ArithmeticBuckets();
// How many distinct questions the bucket can produce (word problems: effectively unbounded).
uint64_t ArithmeticSpace(std::string_view bucket);

// One random item of `bucket`: question, answer, value, expression, steps, key, kind,
// difficulty and min_level are set; id and split are the caller's. `names` are the people of
// word problems (non-empty). Unknown buckets are errors.
Result<TaskItem> MakeArithmeticItem(std::string_view bucket, SplitMix64& rng,
                                    const std::vector<std::string>& names);

}  // namespace allot::tinyworld
