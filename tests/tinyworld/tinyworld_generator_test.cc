// The tiny world's task generator: determinism, split disjointness, correct answers, levels.
#include "tinyworld/task_generator.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include "core/sha256.h"
#include "datasets/jsonl_loader.h"
#include "math/expr_parser.h"
#include "tests/tinyworld/tinyworld_test_world.h"
#include "tinyworld/arithmetic_tasks.h"

namespace allot::tinyworld {
namespace {

namespace fs = std::filesystem;

// An evaluator of + - * over integers, independent of the generator's own arithmetic.
int64_t Evaluate(const math::ExprNode& n) {
  if (n.kind == math::ExprNode::Kind::kNumber) return std::stoll(n.text);
  EXPECT_EQ(n.kind, math::ExprNode::Kind::kBinary);
  const int64_t a = Evaluate(*n.args[0]), b = Evaluate(*n.args[1]);
  switch (n.op) {
    case '+':
      return a + b;
    case '-':
      return a - b;
    case '*':
      return a * b;
  }
  ADD_FAILURE() << "unexpected operator " << n.op;
  return 0;
}

int64_t Evaluate(const std::string& expression) {
  auto tree = math::ParseExpression(expression);
  EXPECT_TRUE(tree.ok()) << expression;
  return tree.ok() ? Evaluate(**tree) : -1;
}

std::vector<const TaskItem*> All(const TinyWorld& w) {
  std::vector<const TaskItem*> out;
  for (const auto* split : {&w.train, &w.test}) {
    for (const TaskItem& t : *split) out.push_back(&t);
  }
  return out;
}

TinyWorldConfig TinyConfig(int64_t seed) {
  TinyWorldConfig c = SmallConfig(seed);
  c.train_per_bucket = 20;
  c.test_per_bucket = 10;
  c.knowledge.people = 40;
  c.knowledge.towns = 12;
  return c;
}

TEST(TinyWorldGeneratorTest, SameSeedSameBytesOtherSeedDiffers) {
  auto a = GenerateTinyWorld(TinyConfig(7));
  auto b = GenerateTinyWorld(TinyConfig(7));
  auto c = GenerateTinyWorld(TinyConfig(8));
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(ItemsJsonl(a->train), ItemsJsonl(b->train));
  EXPECT_EQ(ItemsJsonl(a->test), ItemsJsonl(b->test));
  EXPECT_EQ(CorpusJsonl(a->knowledge), CorpusJsonl(b->knowledge));
  EXPECT_EQ(SftJsonl(a->sft), SftJsonl(b->sft));
  EXPECT_NE(ItemsJsonl(a->train), ItemsJsonl(c->train));
  EXPECT_NE(ItemsJsonl(a->test), ItemsJsonl(c->test));
  EXPECT_NE(CorpusJsonl(a->knowledge), CorpusJsonl(c->knowledge));
}

TEST(TinyWorldGeneratorTest, ABucketsDrawsDoNotDependOnOtherBuckets) {
  TinyWorldConfig only = SmallConfig(7);
  only.buckets = {"mul22"};
  only.mc_percent = 0;
  auto a = GenerateTinyWorld(only);
  ASSERT_TRUE(a.ok());
  std::vector<TaskItem> from_full;
  for (const TaskItem& t : SmallWorld().test) {
    if (t.difficulty == "mul22" && !t.multiple_choice()) from_full.push_back(t);
  }
  EXPECT_EQ(ItemsJsonl(a->test), ItemsJsonl(from_full));
}

TEST(TinyWorldGeneratorTest, SplitsNeverShareAQuestionOrAFactEntity) {
  const TinyWorld& w = SmallWorld();
  std::set<std::string> train_keys, train_questions, train_pages, train_entities;
  for (const TaskItem& t : w.train) {
    train_keys.insert(t.key);
    train_questions.insert(t.question);
    if (t.kind == "fact") train_pages.insert(t.page_id), train_entities.insert(t.entity);
  }
  size_t test_facts = 0;
  for (const TaskItem& t : w.test) {
    EXPECT_FALSE(train_keys.count(t.key)) << t.id << ": " << t.question;
    EXPECT_FALSE(train_questions.count(t.question)) << t.id << ": " << t.question;
    if (t.kind == "fact") {
      ++test_facts;
      EXPECT_FALSE(train_entities.count(t.entity)) << t.id << ": " << t.entity;
      // No train question reads the page that answers a test question.
      EXPECT_FALSE(train_pages.count(t.page_id)) << t.id << ": " << t.page_id;
    }
  }
  EXPECT_GT(test_facts, 10u);
}

TEST(TinyWorldGeneratorTest, ArithmeticAnswersAndStepsAreRight) {
  size_t checked = 0;
  for (const TaskItem* t : All(SmallWorld())) {
    if (t->kind == "fact") continue;
    ++checked;
    EXPECT_EQ(std::to_string(Evaluate(t->expression)), t->value) << t->id << ": " << t->question;
    if (!t->multiple_choice()) {
      EXPECT_EQ(t->answer, t->value) << t->id;
    }
    for (const SolutionStep& s : t->steps) {
      long long a = 0, b = 0, c = 0;
      char op = 0;
      if (std::sscanf(s.text.c_str(), "%lld %c %lld = %lld", &a, &op, &b, &c) == 4) {
        EXPECT_EQ(Evaluate(std::to_string(a) + " " + op + " " + std::to_string(b)), c)
            << t->id << ": " << s.text;
      }
      if (s.uses_tool()) {
        ASSERT_EQ(s.tool_query.rfind("calculate ", 0), 0u) << t->id;
        EXPECT_EQ(std::to_string(Evaluate(s.tool_query.substr(10))), s.tool_result) << t->id;
      }
    }
    // The last computed step ends in the answer.
    EXPECT_NE(t->steps.back().text.find(t->value), std::string::npos) << t->id;
  }
  EXPECT_GT(checked, 300u);
}

TEST(TinyWorldGeneratorTest, QuestionsHaveTheirBucketsShape) {
  // Operand digits per bucket: add1 one-digit, add2 two-digit, mul21 two by one, ...
  const std::map<std::string, std::pair<int, int>> digits = {
      {"add1", {1, 1}}, {"add2", {2, 2}}, {"mul21", {2, 1}}, {"mul22", {2, 2}}, {"mul33", {3, 3}}};
  for (const TaskItem* t : All(SmallWorld())) {
    auto it = digits.find(t->difficulty);
    if (it == digits.end()) continue;
    long long a = 0, b = 0;
    char op = 0;
    ASSERT_EQ(std::sscanf(t->question.c_str(), "What is %lld %c %lld?", &a, &op, &b), 3)
        << t->question;
    EXPECT_EQ(static_cast<int>(std::to_string(a).size()), it->second.first) << t->question;
    EXPECT_EQ(static_cast<int>(std::to_string(b).size()), it->second.second) << t->question;
    if (t->difficulty.rfind("mul", 0) == 0) {
      EXPECT_EQ(op, '*') << t->question;
    }
    if (t->difficulty.rfind("add", 0) == 0) {
      EXPECT_TRUE(op == '+' || op == '-') << t->question;
    }
  }
}

TEST(TinyWorldGeneratorTest, MinLevelsFollowTheDesign) {
  const std::map<std::string, int> level = {{"add1", 1}, {"add2", 2},  {"mul21", 2}, {"mul22", 3},
                                            {"word", 3}, {"mul33", 4}, {"fact", 4},  {"fact2", 4}};
  std::set<std::string> buckets;
  for (const TaskItem* t : All(SmallWorld())) {
    buckets.insert(t->difficulty);
    ASSERT_TRUE(level.count(t->difficulty)) << t->difficulty;
    EXPECT_EQ(t->min_level, level.at(t->difficulty)) << t->id;
    bool tool = false;
    for (const SolutionStep& s : t->steps) tool = tool || s.uses_tool();
    // L4 means a tool is needed, and only L4 items use one.
    EXPECT_EQ(tool, t->min_level == 4) << t->id;
    if (t->min_level == 1) {
      EXPECT_EQ(t->steps.size(), 1u) << t->id;
    }
    if (t->min_level == 3 && t->kind == "arith") {
      EXPECT_GE(t->steps.size(), 3u) << t->id;
    }
  }
  EXPECT_EQ(buckets.size(), level.size());
}

TEST(TinyWorldGeneratorTest, MultipleChoiceVariantsHoldTheAnswerOnce) {
  size_t mc = 0;
  for (const TaskItem* t : All(SmallWorld())) {
    if (!t->multiple_choice()) continue;
    ++mc;
    ASSERT_EQ(t->choices.size(), 4u) << t->id;
    ASSERT_EQ(t->answer.size(), 1u) << t->id;
    const size_t at = static_cast<size_t>(t->answer[0] - 'A');
    ASSERT_LT(at, 4u) << t->id;
    EXPECT_EQ(t->choices[at], t->value) << t->id;
    EXPECT_EQ(std::set<std::string>(t->choices.begin(), t->choices.end()).size(), 4u) << t->id;
    EXPECT_EQ(t->answer_format(), "choice");
  }
  EXPECT_GT(mc, 50u);
}

TEST(TinyWorldGeneratorTest, TheAnswersRankAmongNumericOptionsGivesNothingAway) {
  std::map<int, int> rank;  // how many options are smaller than the answer
  int n = 0;
  for (const TaskItem* t : All(SmallWorld())) {
    if (!t->multiple_choice() || t->value.find_first_not_of("0123456789") != std::string::npos) {
      continue;
    }
    ++n;
    int smaller = 0;
    for (const auto& c : t->choices) smaller += std::stoll(c) < std::stoll(t->value);
    ++rank[smaller];
  }
  ASSERT_GT(n, 100);
  for (int r = 0; r < 4; ++r) EXPECT_GT(rank[r], n / 8) << "rank " << r << " of " << n;
}

TEST(TinyWorldGeneratorTest, SmallBucketsAreCappedAndUnknownBucketsRefused) {
  TinyWorldConfig c = SmallConfig();
  c.buckets = {"add1"};
  c.train_per_bucket = 1000;
  c.test_per_bucket = 1000;
  auto w = GenerateTinyWorld(c);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  size_t open = 0;
  for (const auto* split : {&w->train, &w->test}) {
    for (const TaskItem& t : *split) open += !t.multiple_choice();
  }
  EXPECT_EQ(open, ArithmeticSpace("add1"));  // every one-digit sum and difference, once
  c.buckets = {"add3"};
  auto bad = GenerateTinyWorld(c);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("add3"), std::string::npos);
}

// RLoT's long sums: 7-9 letters for distinct digits, one running-sum step per letter after the
// first, each subtask naming its letter, the splits disjoint; drawn from their own stream, so
// that no other file changes with their number.
TEST(TinyWorldGeneratorTest, LongSumsHaveSixToEightRightStepsAndTheirOwnStream) {
  const TinyWorld& w = SmallWorld();
  ASSERT_EQ(w.long_train.size(), 40u);
  ASSERT_EQ(w.long_test.size(), 10u);
  std::set<std::string> test_questions;
  for (const TaskItem& t : w.long_test) test_questions.insert(t.question);
  for (const auto* split : {&w.long_train, &w.long_test}) {
    for (const TaskItem& t : *split) {
      EXPECT_EQ(t.difficulty, "long") << t.id;
      EXPECT_EQ(t.id.find(t.split == "test" ? "tw-test-long-" : "tw-train-long-"), 0u) << t.id;
      EXPECT_GE(t.steps.size(), 6u) << t.question;
      EXPECT_LE(t.steps.size(), 8u) << t.question;
      EXPECT_EQ(std::to_string(Evaluate(t.expression)), t.answer) << t.question;
      int64_t sum = 0;
      std::set<long long> terms;
      for (size_t i = 0; i < t.steps.size(); ++i) {
        long long a = 0, b = 0, c = 0;
        ASSERT_EQ(std::sscanf(t.steps[i].text.c_str(), "%lld + %lld = %lld", &a, &b, &c), 3)
            << t.steps[i].text;
        EXPECT_EQ(a + b, c) << t.steps[i].text;
        EXPECT_GE(b, 1);
        EXPECT_LE(b, 9);
        if (i == 0) terms.insert(a);
        EXPECT_TRUE(terms.insert(b).second) << "a repeated term: " << t.question;
        const std::string name(1, static_cast<char>('a' + i + 1));  // the letter this step adds
        EXPECT_NE(t.steps[i].subtask.find("Add " + (i == 0 ? "a and " + name : name) + "."),
                  std::string::npos)
            << t.steps[i].subtask;
        EXPECT_NE(t.question.find(name + " = " + std::to_string(b)), std::string::npos)
            << t.question;
        if (i > 0) {
          EXPECT_EQ(a, sum) << "not a running sum: " << t.steps[i].text;
        }
        sum = c;
      }
      EXPECT_EQ(std::to_string(sum), t.answer);
      if (t.split == "train") {
        EXPECT_FALSE(test_questions.count(t.question)) << t.question;
      }
    }
  }
  TinyWorldConfig more = SmallConfig();
  more.long_train = 50;
  auto m = GenerateTinyWorld(more);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(ItemsJsonl(m->train), ItemsJsonl(w.train));
  EXPECT_EQ(ItemsJsonl(m->test), ItemsJsonl(w.test));
  EXPECT_EQ(SftJsonl(m->sft), SftJsonl(w.sft));
  EXPECT_EQ(SftJsonl(m->practice), SftJsonl(w.practice));
  EXPECT_EQ(ItemsJsonl(m->long_test), ItemsJsonl(w.long_test));
  EXPECT_NE(SftJsonl(m->rlot), SftJsonl(w.rlot));
}

TEST(TinyWorldGeneratorTest, FilesLoadWithTheDatasetLoader) {
  const fs::path dir =
      fs::path(ALLOT_BINARY_DIR) / ("tinyworld_files_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto manifest = WriteTinyWorld(SmallWorld(), SmallConfig(), dir.string());
  ASSERT_TRUE(manifest.ok()) << manifest.status().ToString();

  datasets::DatasetConfig open;
  open.path = (dir / "test.jsonl").string();
  open.fields.answer_format = "boxed";
  open.fields.solution = {"solution"};
  open.fields.extra = {"difficulty", "min_level"};
  auto ds = datasets::LoadJsonl(open);
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  size_t expected = 0;
  for (const TaskItem& t : SmallWorld().test) expected += !t.multiple_choice();
  ASSERT_EQ(ds->examples.size(), expected);
  for (const auto& ex : ds->examples) {
    EXPECT_EQ(datasets::LastBoxed(ex.solution), ex.answer) << ex.id;
    EXPECT_TRUE(ex.extra.contains("min_level")) << ex.id;
  }

  datasets::DatasetConfig mc;
  mc.path = (dir / "train_mc.jsonl").string();
  mc.fields.options = {"choices"};
  mc.fields.answer_format = "choice";
  auto mcs = datasets::LoadJsonl(mc);
  ASSERT_TRUE(mcs.ok()) << mcs.status().ToString();
  ASSERT_FALSE(mcs->examples.empty());
  for (const auto& ex : mcs->examples) EXPECT_EQ(ex.options.size(), 4u);

  // The manifest names each file's sha256.
  std::string train_bytes = ItemsJsonl([] {
    std::vector<TaskItem> v;
    for (const TaskItem& t : SmallWorld().train) {
      if (!t.multiple_choice()) v.push_back(t);
    }
    return v;
  }());
  EXPECT_NE(manifest->find(Sha256Hex(train_bytes)), std::string::npos);
  for (const char* name : {"long_train.jsonl", "long_test.jsonl", "sft_rlot.jsonl"}) {
    EXPECT_TRUE(fs::exists(dir / name)) << name;
    EXPECT_NE(manifest->find(name), std::string::npos) << name;
  }
  EXPECT_NE(manifest->find(Sha256Hex(SftJsonl(SmallWorld().rlot))), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace allot::tinyworld
