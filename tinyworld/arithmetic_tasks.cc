#include "tinyworld/arithmetic_tasks.h"

#include <cstdint>

namespace allot::tinyworld {
namespace {

std::string N(int64_t v) { return std::to_string(v); }

// "a op b = c" as a step's text.
std::string Eq(int64_t a, char op, int64_t b, int64_t c) {
  return N(a) + " " + op + " " + N(b) + " = " + N(c);
}

SolutionStep Step(std::string subtask, std::string text) {
  SolutionStep s;
  s.subtask = std::move(subtask);
  s.text = std::move(text);
  return s;
}

TaskItem Base(std::string_view bucket, const char* kind, int level) {
  TaskItem t;
  t.kind = kind;
  t.difficulty = std::string(bucket);
  t.min_level = level;
  return t;
}

void Finish(TaskItem& t, int64_t answer) {
  t.answer = N(answer);
  t.value = t.answer;
  t.key = t.question;
}

// a + b or a - b (a >= b) with both operands in [lo, hi].
TaskItem AddSub(std::string_view bucket, int level, int64_t lo, int64_t hi, SplitMix64& rng) {
  TaskItem t = Base(bucket, "arith", level);
  int64_t a = rng.Range(lo, hi), b = rng.Range(lo, hi);
  const bool minus = rng.Percent(50);
  if (minus && a < b) std::swap(a, b);
  const char op = minus ? '-' : '+';
  const int64_t c = minus ? a - b : a + b;
  t.question = "What is " + N(a) + " " + op + " " + N(b) + "?";
  t.expression = N(a) + " " + op + " " + N(b);
  if (b < 10) {
    t.steps.push_back(Step(minus ? "Subtract the numbers." : "Add the numbers.", Eq(a, op, b, c)));
  } else {
    // Tens first, then ones: two one-operation steps a small model can copy.
    const int64_t tens = b / 10 * 10, ones = b % 10;
    const int64_t mid = minus ? a - tens : a + tens;
    const char* verb = minus ? "Subtract" : "Add";
    t.steps.push_back(Step(std::string(verb) + " the tens of " + N(b) + ".", Eq(a, op, tens, mid)));
    t.steps.push_back(Step(std::string(verb) + " the ones of " + N(b) + ".", Eq(mid, op, ones, c)));
  }
  Finish(t, c);
  return t;
}

// a * b, a two-digit, b one-digit: (tens * b) + (ones * b).
TaskItem Mul21(std::string_view bucket, SplitMix64& rng) {
  TaskItem t = Base(bucket, "arith", 2);
  const int64_t a = rng.Range(12, 99), b = rng.Range(2, 9);
  const int64_t tens = a / 10 * 10, ones = a % 10;
  t.question = "What is " + N(a) + " * " + N(b) + "?";
  t.expression = N(a) + " * " + N(b);
  t.steps.push_back(Step("Multiply the tens of " + N(a) + ".", Eq(tens, '*', b, tens * b)));
  t.steps.push_back(Step("Multiply the ones of " + N(a) + ".", Eq(ones, '*', b, ones * b)));
  t.steps.push_back(Step("Add the two products.", Eq(tens * b, '+', ones * b, a * b)));
  Finish(t, a * b);
  return t;
}

// a * b, both two-digit: a * (tens of b) + a * (ones of b).
TaskItem Mul22(std::string_view bucket, SplitMix64& rng) {
  TaskItem t = Base(bucket, "arith", 3);
  const int64_t a = rng.Range(12, 99), b = rng.Range(12, 99);
  const int64_t tens = b / 10 * 10, ones = b % 10;
  t.question = "What is " + N(a) + " * " + N(b) + "?";
  t.expression = N(a) + " * " + N(b);
  t.steps.push_back(
      Step("Multiply " + N(a) + " by the tens of " + N(b) + ".", Eq(a, '*', tens, a * tens)));
  t.steps.push_back(
      Step("Multiply " + N(a) + " by the ones of " + N(b) + ".", Eq(a, '*', ones, a * ones)));
  t.steps.push_back(Step("Add the two products.", Eq(a * tens, '+', a * ones, a * b)));
  Finish(t, a * b);
  return t;
}

// a * b, both three-digit: the calculator tool (CogER's L4).
TaskItem Mul33(std::string_view bucket, SplitMix64& rng) {
  TaskItem t = Base(bucket, "arith", 4);
  const int64_t a = rng.Range(100, 999), b = rng.Range(100, 999);
  t.question = "What is " + N(a) + " * " + N(b) + "?";
  t.expression = N(a) + " * " + N(b);
  SolutionStep s = Step("Compute the product with the calculator.",
                        "I need the product " + N(a) + " * " + N(b) + ".");
  s.tool_query = "calculate " + N(a) + " * " + N(b);
  s.tool_result = N(a * b);
  t.steps.push_back(std::move(s));
  t.steps.push_back(Step("Read the product.", "The product is " + N(a * b) + "."));
  Finish(t, a * b);
  return t;
}

// a + b + c + ..., k in [7, 9] letters standing for distinct digits 1..9, given after the sum: a
// running sum, one step per letter after the first. Each step is easy; there are more of them
// than RLoT's five blocks can reason through one at a time (Sec. 3.2's cap), so these want
// Decompose, which solves every subtask inside one block. The subtasks name letters ("Add d."),
// so that a subtask's number is found by its name: the tiny models do not copy the k-th of a
// row of numbers reliably (a listing of the numbers themselves lost its place within a few).
TaskItem LongSum(std::string_view bucket, SplitMix64& rng) {
  TaskItem t = Base(bucket, "arith", 2);
  const int64_t terms = rng.Range(7, 9);
  std::vector<int64_t> a = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  rng.Shuffle(a);
  a.resize(static_cast<size_t>(terms));
  auto letter = [](size_t i) { return std::string(1, static_cast<char>('a' + i)); };
  std::string sum_of = letter(0), values = letter(0) + " = " + N(a[0]);
  t.expression = N(a[0]);
  for (size_t i = 1; i < a.size(); ++i) {
    sum_of += " + " + letter(i);
    values += ", " + letter(i) + " = " + N(a[i]);
    t.expression += " + " + N(a[i]);
  }
  t.question = "What is " + sum_of + ", where " + values + "?";
  int64_t sum = a[0];
  for (size_t i = 1; i < a.size(); ++i) {
    const std::string subtask =
        i == 1 ? "Add " + letter(0) + " and " + letter(1) + "." : "Add " + letter(i) + ".";
    t.steps.push_back(Step(subtask, Eq(sum, '+', a[i], sum + a[i])));
    sum += a[i];
  }
  Finish(t, sum);
  return t;
}

struct Thing {
  const char* plural;
  const char* holder;  // what holds several of them
};
const std::vector<Thing>& Things() {
  static const std::vector<Thing> kThings = {{"apples", "boxes"},   {"stones", "bags"},
                                             {"candles", "crates"}, {"shells", "jars"},
                                             {"coins", "purses"},   {"lamps", "carts"}};
  return kThings;
}

// Short stories of two or three operations.
TaskItem Word(std::string_view bucket, SplitMix64& rng, const std::vector<std::string>& names) {
  TaskItem t = Base(bucket, "word", 3);
  const std::string who = rng.Pick(names);
  const Thing& th = Things()[rng.Below(Things().size())];
  const std::string things = th.plural, holders = th.holder;
  int64_t answer = 0;
  switch (rng.Below(4)) {
    case 0: {  // a holders of b, gives away c
      const int64_t a = rng.Range(2, 9), b = rng.Range(3, 19), ab = a * b;
      const int64_t c = rng.Range(1, ab - 1);
      answer = ab - c;
      t.question = who + " has " + N(a) + " " + holders + " with " + N(b) + " " + things +
                   " in each. " + who + " gives away " + N(c) + " " + things + ". How many " +
                   things + " does " + who + " have now?";
      t.expression = N(a) + " * " + N(b) + " - " + N(c);
      t.steps.push_back(Step("Count all the " + things + ".", Eq(a, '*', b, ab)));
      t.steps.push_back(Step("Take away the " + things + " given away.", Eq(ab, '-', c, answer)));
      break;
    }
    case 1: {  // a things at p coins each, pays q
      const int64_t a = rng.Range(2, 9), p = rng.Range(2, 15), cost = a * p;
      const int64_t q = (cost / 10 + 1 + rng.Range(0, 5)) * 10;
      answer = q - cost;
      t.question = who + " buys " + N(a) + " " + things + " for " + N(p) + " coins each and pays " +
                   N(q) + " coins. How many coins does " + who + " get back?";
      t.expression = N(q) + " - " + N(a) + " * " + N(p);
      t.steps.push_back(Step("Find the price of all the " + things + ".", Eq(a, '*', p, cost)));
      t.steps.push_back(Step("Subtract the price from the payment.", Eq(q, '-', cost, answer)));
      break;
    }
    case 2: {  // a per day for d days, then b more
      const int64_t a = rng.Range(2, 19), d = rng.Range(2, 9), b = rng.Range(1, 30);
      answer = a * d + b;
      t.question = who + " collects " + N(a) + " " + things + " a day for " + N(d) +
                   " days, then " + N(b) + " more. How many " + things + " does " + who +
                   " collect in all?";
      t.expression = N(a) + " * " + N(d) + " + " + N(b);
      t.steps.push_back(Step("Count the " + things + " of the days.", Eq(a, '*', d, a * d)));
      t.steps.push_back(Step("Add the extra " + things + ".", Eq(a * d, '+', b, answer)));
      break;
    }
    default: {  // k holders of a, plus b loose, minus c broken
      const int64_t a = rng.Range(3, 12), k = rng.Range(2, 9), b = rng.Range(1, 20);
      const int64_t total = a * k + b, c = rng.Range(1, total - 1);
      answer = total - c;
      t.question = "Each of " + who + "'s " + holders + " holds " + N(a) + " " + things + ". " +
                   who + " fills " + N(k) + " " + holders + " and keeps " + N(b) + " loose " +
                   things + ". Then " + N(c) + " " + things + " are lost. How many " + things +
                   " are left?";
      t.expression = N(a) + " * " + N(k) + " + " + N(b) + " - " + N(c);
      t.steps.push_back(
          Step("Count the " + things + " in the " + holders + ".", Eq(a, '*', k, a * k)));
      t.steps.push_back(Step("Add the loose " + things + ".", Eq(a * k, '+', b, total)));
      t.steps.push_back(Step("Take away the lost " + things + ".", Eq(total, '-', c, answer)));
      break;
    }
  }
  Finish(t, answer);
  return t;
}

}  // namespace

std::vector<std::string> ArithmeticBuckets() {
  return {"add1", "add2", "mul21", "mul22", "word", "mul33"};
}

uint64_t ArithmeticSpace(std::string_view bucket) {
  if (bucket == "add1") return 100 + 55;  // ordered sums, differences with a >= b
  if (bucket == "add2") return 90 * 90 + 90 * 91 / 2;
  if (bucket == "mul21") return 88 * 8;
  if (bucket == "mul22") return 88 * 88;
  if (bucket == "mul33") return 900 * 900;
  return UINT64_MAX;
}

Result<TaskItem> MakeArithmeticItem(std::string_view bucket, SplitMix64& rng,
                                    const std::vector<std::string>& names) {
  if (bucket == "add1") return AddSub(bucket, 1, 0, 9, rng);
  if (bucket == "add2") return AddSub(bucket, 2, 10, 99, rng);
  if (bucket == "mul21") return Mul21(bucket, rng);
  if (bucket == "mul22") return Mul22(bucket, rng);
  if (bucket == "mul33") return Mul33(bucket, rng);
  if (bucket == kLongBucket) return LongSum(bucket, rng);
  if (bucket == "word") {
    if (names.empty()) return InvalidArgument("tiny world: word problems need names");
    return Word(bucket, rng, names);
  }
  return InvalidArgument("tiny world: unknown arithmetic bucket '" + std::string(bucket) + "'");
}

}  // namespace allot::tinyworld
