// The SFT data of the tiny models: each format's shape, and that its content is right.
#include "tinyworld/sft_records.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <regex>
#include <set>

#include "core/atomic_file.h"
#include "datasets/jsonl_loader.h"
#include "tests/tinyworld/tinyworld_test_world.h"
#include "tinyworld/formats.h"
#include "tinyworld/rlot_templates.h"

namespace allot::tinyworld {
namespace {

std::map<std::string, const TaskItem*> ItemsById() {
  std::map<std::string, const TaskItem*> out;
  for (const TaskItem& t : SmallWorld().train) out[t.id] = &t;
  return out;
}

// The RLoT formats: rendered from rlot_templates.h as envs/rlot sends them.
bool IsRlot(const std::string& format) {
  static const std::set<std::string> kRlot = {
      "self_eval",     "refine",    "reason_step", "has_answer",  "final",      "decompose",
      "solve_subtask", "summarize", "plans",       "choose_plan", "follow_plan"};
  return kRlot.count(format) > 0;
}

// The records of one format; RLoT records as the model sees them in the env (prompt with its
// line end, completion after it), so that every format reads the same below.
std::vector<const SftRecord*> Records(const std::string& format) {
  static const auto* normalized = [] {
    auto* m = new std::map<std::string, std::vector<SftRecord>>();
    for (SftRecord r : SmallWorld().sft) {
      if (IsRlot(r.format)) {
        r.prompt += "\n";
        r.completion.erase(0, 1);
      }
      (*m)[r.format].push_back(std::move(r));
    }
    return m;
  }();
  std::vector<const SftRecord*> out;
  if (auto it = normalized->find(format); it != normalized->end()) {
    for (const SftRecord& r : it->second) out.push_back(&r);
  }
  return out;
}

std::string FullQuestion(const TaskItem& t) {
  datasets::Example ex;
  ex.question = t.question;
  ex.options = t.choices;
  return ex.PromptText();
}

std::vector<std::string> Lines(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t nl = s.find('\n', start);
    out.push_back(s.substr(start, nl == std::string::npos ? std::string::npos : nl - start));
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  return out;
}

TEST(TinyWorldSftTest, EveryFormatIsWrittenFromTrainItemsOnly) {
  const auto items = ItemsById();
  std::set<std::string> formats;
  for (const SftRecord& r : SmallWorld().sft) {
    formats.insert(r.format);
    ASSERT_TRUE(items.count(r.item_id)) << r.item_id << " is not a train item";
    // Byte-level models: plain ASCII, and the prompt ends with its one-line instruction.
    for (unsigned char c : r.prompt + r.completion) ASSERT_LT(c, 0x80) << r.item_id;
    if (IsRlot(r.format)) {
      // envs/rlot drops the template's trailing newline and trims the reply.
      ASSERT_NE(r.prompt.back(), '\n') << r.item_id;
      ASSERT_EQ(r.completion.front(), '\n') << r.item_id;
    } else {
      ASSERT_EQ(r.prompt.back(), '\n') << r.item_id;
    }
    ASSERT_FALSE(r.completion.empty()) << r.item_id;
  }
  const auto all = SftFormats();
  EXPECT_EQ(formats, std::set<std::string>(all.begin(), all.end()));
}

TEST(TinyWorldSftTest, AnswersInBoxesAreTheItemsAnswers) {
  const auto items = ItemsById();
  for (const char* f : {"direct", "cot", "final"}) {
    for (const SftRecord* r : Records(f)) {
      EXPECT_EQ(datasets::LastBoxed(r->completion), items.at(r->item_id)->answer)
          << f << " " << r->item_id;
    }
  }
  // Direct answers and plain chains of thought are never taught for tool questions.
  for (const char* f : {"direct", "cot"}) {
    for (const SftRecord* r : Records(f)) EXPECT_LT(items.at(r->item_id)->min_level, 4) << f;
  }
}

// The step drill: every record asks one operation of a train item's chain, answers it right,
// and no test question is among them (the generator holds the test split out).
TEST(TinyWorldSftTest, StepRecordsDrillTheChainsOperationsButNoTestQuestion) {
  const auto items = ItemsById();
  std::set<std::string> test_questions;
  for (const TaskItem& t : SmallWorld().test) test_questions.insert(t.question);
  const std::regex ask(R"(^What is (\d+) ([-+*]) (\d+)\?$)");
  size_t direct = 0, cot = 0;
  for (const SftRecord* r : Records("step")) {
    const TaskItem& item = *items.at(r->item_id);
    EXPECT_LT(item.min_level, 4) << "no drill for tool items: " << r->item_id;
    const std::string question = Lines(r->prompt).front();
    std::smatch m;
    ASSERT_TRUE(std::regex_match(question, m, ask)) << r->prompt;
    EXPECT_FALSE(test_questions.count(question)) << question << " is a test question";
    const int64_t a = std::stoll(m[1]), b = std::stoll(m[3]);
    const char op = m[2].str()[0];
    const int64_t c = op == '+' ? a + b : op == '-' ? a - b : a * b;
    EXPECT_EQ(datasets::LastBoxed(r->completion), std::to_string(c)) << r->prompt;
    // The operation is one of the item's own steps.
    const std::string eq = m[1].str() + " " + op + " " + m[3].str() + " = " + std::to_string(c);
    bool own = false;
    for (const SolutionStep& s : item.steps) own = own || s.text == eq;
    EXPECT_TRUE(own) << eq << " is not a step of " << r->item_id;
    if (r->completion.find(StepLine(1, eq)) == 0)
      ++cot;
    else
      ++direct;
  }
  EXPECT_GT(direct, 100u);
  EXPECT_EQ(direct, cot) << "each step is drilled directly and as a one-step chain";
  // A test question that is also a train item's step is left out: hold out every step.
  TinyWorldConfig c = SmallConfig();
  c.sft.formats = {"step"};
  c.buckets = {"add2"};
  auto w = GenerateTinyWorld(c);
  ASSERT_TRUE(w.ok());
  std::set<std::string> everything;
  for (const TaskItem& t : w->train) {
    for (const SolutionStep& s : t.steps)
      everything.insert("What is " + s.text.substr(0, s.text.find(" =")) + "?");
  }
  SplitMix64 rng(1);
  for (const TaskItem& t : w->train) {
    auto records = MakeSftRecords(t, c.sft, rng, everything);
    ASSERT_TRUE(records.ok());
    EXPECT_TRUE(records->empty()) << t.id;
  }
}

// rlot_percent: the share of tool-free items that get the RLoT records.
TEST(TinyWorldSftTest, RlotPercentSetsTheShareOfItemsWithRlotRecords) {
  auto items_with_rlot = [](int64_t percent) {
    TinyWorldConfig c = SmallConfig();
    c.sft.rlot_percent = percent;
    auto w = GenerateTinyWorld(c);
    EXPECT_TRUE(w.ok());
    std::set<std::string> ids, tool_free;
    for (const SftRecord& r : w->sft) {
      if (r.format == "final") ids.insert(r.item_id);
      if (r.format == "cot") tool_free.insert(r.item_id);
    }
    return std::make_pair(ids.size(), tool_free.size());
  };
  const auto [none, n0] = items_with_rlot(0);
  const auto [half, n50] = items_with_rlot(50);
  const auto [all, n100] = items_with_rlot(100);
  EXPECT_EQ(none, 0u);
  EXPECT_EQ(all, n100);
  EXPECT_GT(half, n50 / 3);
  EXPECT_LT(half, 2 * n50 / 3);
}

TEST(TinyWorldSftTest, ToolRecordsStopAtTheQueryAndNeverWriteResults) {
  const auto items = ItemsById();
  std::map<std::string, int> queries;
  for (const SftRecord* r : Records("tool")) {
    EXPECT_EQ(r->completion.find(kToolResultOpen), std::string::npos) << r->item_id;
    const bool query = r->completion.find(kToolQueryOpen) != std::string::npos;
    if (query) {
      ++queries[r->item_id];
      EXPECT_TRUE(r->completion.ends_with(kToolQueryClose)) << r->completion;
    } else {
      EXPECT_EQ(datasets::LastBoxed(r->completion), items.at(r->item_id)->answer);
    }
    // A later segment's prompt carries the results of the earlier queries.
    EXPECT_EQ(r->prompt.find(kToolQueryOpen) == std::string::npos,
              r->prompt.find(kToolResultOpen) == std::string::npos);
  }
  // Each segment continues the conversation exactly as CoTool builds it: the previous prompt
  // and completion, then "\n<|begin_tool_result|> ... <|end_tool_result|>\n".
  const SftRecord* previous = nullptr;
  for (const SftRecord* r : Records("tool")) {
    if (previous != nullptr && previous->item_id == r->item_id) {
      const std::string so_far = previous->prompt + previous->completion;
      ASSERT_EQ(r->prompt.substr(0, so_far.size()), so_far) << r->item_id;
      EXPECT_EQ(r->prompt.substr(so_far.size(), kToolResultOpen.size() + 1),
                "\n" + std::string(kToolResultOpen))
          << r->item_id;
      EXPECT_TRUE(r->prompt.ends_with(std::string(kToolResultClose) + "\n")) << r->item_id;
    } else {
      EXPECT_EQ(r->prompt, Prompt(FullQuestion(*items.at(r->item_id)), "", kAskTool));
    }
    previous = r;
  }
  for (const auto& [id, item] : items) {
    int expected = 0;
    for (const SolutionStep& s : item->steps) expected += s.uses_tool();
    EXPECT_EQ(queries[id], expected) << id;
  }
}

TEST(TinyWorldSftTest, ToolOutputsAreReadBeforeTheyJoinTheChain) {
  const auto items = ItemsById();
  size_t n = 0;
  for (const SftRecord* r : Records("reason_in_tool")) {
    ++n;
    const auto steps = items.at(r->item_id)->AllSteps();
    // The reading is the reference step after the tool call, and the raw output is in the prompt.
    bool found = false;
    for (size_t i = 0; i + 1 < steps.size(); ++i) {
      if (steps[i].uses_tool() && r->completion == steps[i + 1].text) {
        found = found || r->prompt.find(std::string(kToolOutputLine) + steps[i].tool_result) !=
                             std::string::npos;
      }
    }
    EXPECT_TRUE(found) << r->item_id << ": " << r->completion;
  }
  EXPECT_GT(n, 50u);
  // Reasoned results (the default): a trajectory shows the reading, never the raw page.
  for (const SftRecord* r : Records("tool")) {
    for (const SolutionStep& s : items.at(r->item_id)->steps) {
      if (s.uses_tool() && s.tool_result.size() > 40) {
        EXPECT_EQ(r->prompt.find(s.tool_result), std::string::npos) << r->item_id;
      }
    }
  }
  TinyWorldConfig c = SmallConfig();
  c.sft.tool_results = "raw";
  c.sft.formats = {"tool"};
  c.buckets = {"fact"};
  auto w = GenerateTinyWorld(c);
  ASSERT_TRUE(w.ok());
  size_t raw = 0;
  for (const SftRecord& r : w->sft) {
    raw += r.prompt.find(" was born in ") != std::string::npos &&
           r.prompt.find(" keeps ") != std::string::npos;
  }
  EXPECT_GT(raw, 0u);
}

TEST(TinyWorldSftTest, RouterRecordsCarryOneLevelTag) {
  std::map<int, int> levels;
  const std::regex tag("^(.+ )?<question_level>L([1-4])</question_level>$");
  for (const SftRecord* r : Records("route")) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(r->completion, m, tag)) << r->completion;
    const int level = std::stoi(m[2]);
    ++levels[level];
    EXPECT_EQ(m[1].matched, level == 1) << "only L1 answers before the tag: " << r->completion;
  }
  // Random labels (the default): every level is common, so the router starts unbiased.
  const auto n = static_cast<double>(Records("route").size());
  for (int l = 1; l <= 4; ++l) EXPECT_GT(levels[l] / n, 0.15) << "L" << l;

  TinyWorldConfig c = SmallConfig();
  c.sft.route_labels = "true";
  c.sft.formats = {"route"};
  auto w = GenerateTinyWorld(c);
  ASSERT_TRUE(w.ok());
  std::map<std::string, int> level_of;
  for (const TaskItem& t : w->train) level_of[t.id] = t.min_level;
  for (const SftRecord& r : w->sft) {
    EXPECT_NE(r.completion.find(LevelTag(level_of[r.item_id])), std::string::npos) << r.item_id;
  }
  c.sft.route_labels = "oracle";
  EXPECT_FALSE(GenerateTinyWorld(c).ok());
}

TEST(TinyWorldSftTest, SelfEvaluationHasSevenParsableScoresThatSeeTheMistake) {
  // The reference navigator's parser reads KEY[:=\[a-zA-Z \n]*(0|1|2|3) (RLoT code).
  std::vector<std::regex> patterns;
  for (std::string_view key : kSelfEvalKeys) {
    patterns.emplace_back(std::string(key) + "[:=\\[a-zA-Z \\n]*(0|1|2|3)");
  }
  size_t corrupted = 0;
  for (const SftRecord* r : Records("self_eval")) {
    const auto lines = Lines(r->completion);
    ASSERT_EQ(lines.size(), 7u) << r->completion;
    std::map<std::string, int> score;
    for (size_t i = 0; i < 7; ++i) {
      const std::string key(kSelfEvalKeys[i]);
      std::smatch m;
      ASSERT_TRUE(std::regex_search(lines[i], m, patterns[i])) << lines[i];
      score[key] = std::stoi(m[1]);
      EXPECT_NE(lines[i].find(" reason="), std::string::npos);
    }
    // The newest step's equation decides A1 (modeling) and A3 (calculation).
    const std::string newest = Lines(r->prompt).end()[-3];
    long long a = 0, b = 0, c = 0;
    char op = 0;
    if (std::sscanf(newest.c_str(), "Step %*d: %lld %c %lld = %lld", &a, &op, &b, &c) == 4) {
      const long long right = op == '+' ? a + b : op == '-' ? a - b : a * b;
      EXPECT_EQ(score["A3"], right == c ? 3 : 1) << newest;
      corrupted += score["A1"] == 1 || score["A3"] == 1;
    }
  }
  EXPECT_GT(corrupted, 20u);
}

TEST(TinyWorldSftTest, RefineRestoresTheReferenceStep) {
  const auto items = ItemsById();
  ASSERT_FALSE(Records("refine").empty());
  for (const SftRecord* r : Records("refine")) {
    const auto steps = items.at(r->item_id)->AllSteps();
    bool found = false;
    for (const SolutionStep& s : steps) found = found || r->completion == s.text;
    EXPECT_TRUE(found) << r->completion;
    // The newest step shown is wrong: it is not the completion.
    const std::string newest = Lines(r->prompt).end()[-3];
    EXPECT_NE(newest.substr(newest.find(": ") + 2), r->completion) << "nothing to refine";
  }
  for (const SftRecord* r : Records("follow_plan")) {
    bool found = false;
    for (const SolutionStep& s : items.at(r->item_id)->AllSteps()) {
      found = found || (r->completion == s.text && r->prompt.find("Follow the plan: " + s.subtask +
                                                                  "\n") != std::string::npos);
    }
    EXPECT_TRUE(found) << r->prompt << r->completion;
  }
}

// configs/prompts/tinyworld/rlot holds the templates the RLoT records were rendered from.
TEST(TinyWorldSftTest, RlotTemplateFilesAreTheTrainedTemplates) {
  for (const RlotTemplate& t : kRlotTemplates) {
    std::string text;
    const std::string path = std::string(ALLOT_SOURCE_DIR) + "/configs/prompts/tinyworld/rlot/" +
                             std::string(t.name) + ".txt";
    ASSERT_TRUE(ReadFile(path, &text).ok()) << path;
    EXPECT_EQ(text, t.text) << path;
  }
  // An empty chain reads "(none yet)", as the env writes it.
  bool first_step = false;
  for (const SftRecord* r : Records("reason_step")) {
    first_step =
        first_step || r->prompt.find("Reasoning so far:\n(none yet)\n") != std::string::npos;
  }
  EXPECT_TRUE(first_step);
}

TEST(TinyWorldSftTest, LogicBlocksUseRLoTMarkers) {
  const auto items = ItemsById();
  for (const SftRecord* r : Records("decompose")) {
    const auto lines = Lines(r->completion);
    ASSERT_EQ(lines.size(), items.at(r->item_id)->AllSteps().size());
    for (size_t i = 0; i < lines.size(); ++i) {
      EXPECT_EQ(lines[i].rfind(std::string(kSubtaskPrefix) + std::to_string(i + 1) + ": ", 0), 0u);
    }
  }
  for (const SftRecord* r : Records("plans")) {
    const auto lines = Lines(r->completion);
    ASSERT_EQ(lines.size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(lines[i].rfind(std::string(kPlanPrefix) + std::to_string(i + 1) + ": ", 0), 0u);
    }
  }
  // The chosen plan is the one that is the reference's next subtask.
  for (const SftRecord* r : Records("choose_plan")) {
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r->completion, m,
                                  std::regex("^The most promising plan is Plan([1-3]): ")));
    const std::string plan_line = "\nPlan" + m[1].str() + ": ";
    const size_t at = r->prompt.find(plan_line);
    ASSERT_NE(at, std::string::npos);
    const std::string plan = r->prompt.substr(at + plan_line.size(),
                                              r->prompt.find('\n', at + 1) - at - plan_line.size());
    bool is_reference = false;
    for (const SolutionStep& s : items.at(r->item_id)->AllSteps()) {
      is_reference = is_reference || s.subtask == plan;
    }
    EXPECT_TRUE(is_reference) << plan;
  }
  for (const SftRecord* r : Records("numbered")) {
    EXPECT_EQ(r->completion.rfind("1. ", 0), 0u);
    EXPECT_NE(r->completion.find("\n2. "), std::string::npos);
  }
  for (const SftRecord* r : Records("has_answer")) {
    EXPECT_TRUE(r->completion == "yes" || r->completion == "no");
  }
}

// configs/prompts/tinyworld/coger renders the prompts the SFT data taught.
TEST(TinyWorldSftTest, CogerPromptTemplatesRenderTheTrainedPrompts) {
  auto render = [](const std::string& name, const std::map<std::string, std::string>& values) {
    std::string text;
    const std::string path =
        std::string(ALLOT_SOURCE_DIR) + "/configs/prompts/tinyworld/coger/" + name + ".txt";
    EXPECT_TRUE(ReadFile(path, &text).ok()) << path;
    for (const auto& [key, value] : values) {
      const std::string slot = "{{" + key + "}}";
      for (size_t at = text.find(slot); at != std::string::npos; at = text.find(slot, at)) {
        text.replace(at, slot.size(), value);
        at += value.size();
      }
    }
    return text;
  };
  const auto items = ItemsById();
  const std::map<std::string, std::vector<std::string>> templates = {
      {"route", {"router"}},
      {"direct", {"l1_direct"}},
      {"cot", {"l2_cot", "l3_reasoning"}},
      {"tool", {"cotool"}}};
  for (const auto& [format, names] : templates) {
    const SftRecord* r = Records(format).front();
    for (const auto& name : names) {
      const std::string q = FullQuestion(*items.at(r->item_id));
      EXPECT_TRUE(r->prompt.starts_with(render(name, {{"question", q}}))) << name;
      EXPECT_EQ(render(name, {{"question", q}}).back(), '\n') << name;
    }
  }
  const SftRecord* r = Records("reason_in_tool").front();
  for (const SolutionStep& s : items.at(r->item_id)->steps) {
    if (!s.uses_tool()) continue;
    EXPECT_EQ(render("reason_in_tool", {{"question", FullQuestion(*items.at(r->item_id))},
                                        {"tool_query", s.tool_query},
                                        {"tool_output", s.tool_result}}),
              r->prompt);
    break;
  }
}

// The words of `text` made of letters, in order.
std::vector<std::string> Words(const std::string& text) {
  std::vector<std::string> out;
  const std::regex word("[A-Za-z]+");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), word); it != std::sregex_iterator();
       ++it) {
    out.push_back(it->str());
  }
  return out;
}

TEST(TinyWorldSftTest, FreshNamesRenameFactItemsConsistentlyAndTouchNothingElse) {
  TinyWorldConfig plain = SmallConfig();
  plain.buckets = {"add2", "word", "fact", "fact2"};
  TinyWorldConfig fresh = plain;
  fresh.sft.fresh_names_percent = 100;
  auto a = GenerateTinyWorld(plain);
  auto b = GenerateTinyWorld(fresh);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->sft.size(), b->sft.size());
  std::set<std::string> world_names;
  for (const Town& t : b->knowledge.towns) world_names.insert({t.name, t.river});
  for (const Person& p : b->knowledge.people) {
    for (const std::string& w : Words(p.name)) world_names.insert(w);
  }
  const std::regex query("<\\|begin_tool_query\\|> search (.*) \\S+ <\\|end_tool_query\\|>$");
  std::set<std::string> first_queries;
  size_t renamed = 0, first_segments = 0;
  for (size_t i = 0; i < b->sft.size(); ++i) {
    const SftRecord& r = b->sft[i];
    const bool fact = r.item_id.find("-fact") != std::string::npos;
    if (!fact) {
      // Renaming draws from its own stream: every other record is byte for byte the same.
      EXPECT_EQ(r.prompt, a->sft[i].prompt);
      EXPECT_EQ(r.completion, a->sft[i].completion);
      continue;
    }
    ++renamed;
    for (const std::string& w : Words(r.prompt + " " + r.completion)) {
      ASSERT_EQ(world_names.count(w), 0u)
          << "a name of the world is left: " << w << " in " << r.prompt << r.completion;
    }
    std::smatch m;
    if (r.format != "tool" || !std::regex_search(r.completion, m, query)) continue;
    // Whatever the query names was said before it: in the question or in a tool result.
    const std::string named = m[1];
    EXPECT_NE(r.prompt.find(named), std::string::npos) << r.prompt << r.completion;
    if (r.prompt.find("<|begin_tool_result|>") == std::string::npos) {
      ++first_segments;
      first_queries.insert(named);
    }
  }
  EXPECT_GT(renamed, 100u);
  // Each item its own names: the four questions about one person ask about four people.
  EXPECT_GT(first_segments, 50u);
  EXPECT_EQ(first_queries.size(), first_segments);

  // Copies: each renamed item twice, about different people; every other record as before.
  fresh.sft.fresh_names_copies = 2;
  auto c = GenerateTinyWorld(fresh);
  ASSERT_TRUE(c.ok());
  std::vector<const SftRecord*> others_a, others_c;
  std::map<std::string, std::set<std::string>> first_prompts;  // item -> its first tool prompts
  for (const SftRecord& r : a->sft) {
    if (r.item_id.find("-fact") == std::string::npos) others_a.push_back(&r);
  }
  for (const SftRecord& r : c->sft) {
    if (r.item_id.find("-fact") == std::string::npos) {
      others_c.push_back(&r);
    } else if (r.format == "tool" && r.prompt.find("<|begin_tool_result|>") == std::string::npos) {
      first_prompts[r.item_id].insert(r.prompt);
    }
  }
  EXPECT_EQ(c->sft.size() - others_c.size(), 2 * renamed);
  ASSERT_EQ(others_c.size(), others_a.size());
  for (size_t i = 0; i < others_a.size(); ++i) {
    EXPECT_EQ(others_c[i]->completion, others_a[i]->completion);
  }
  ASSERT_FALSE(first_prompts.empty());
  for (const auto& [id, prompts] : first_prompts) EXPECT_EQ(prompts.size(), 2u) << id;

  fresh.sft.fresh_names_copies = 0;
  EXPECT_FALSE(GenerateTinyWorld(fresh).ok());
  fresh.sft.fresh_names_copies = 1;
  fresh.sft.fresh_names_percent = 101;
  EXPECT_FALSE(GenerateTinyWorld(fresh).ok());
}

// The practice phase's data: every drill record, as many others as the share says, nothing that
// sft_train.jsonl does not hold, in its order; and drawing it changes no other record.
TEST(TinyWorldSftTest, PracticeHoldsTheWholeDrillAndADrawOfTheRest) {
  const TinyWorld& w = SmallWorld();
  std::map<std::string, size_t> position;  // a record's bytes -> its first line in sft
  for (size_t i = 0; i < w.sft.size(); ++i) position.emplace(w.sft[i].ToJson().dump(), i);
  size_t drill = 0;
  for (const SftRecord& r : w.sft) drill += r.format == "step";
  ASSERT_GT(drill, 0u);
  size_t drill_seen = 0, others = 0, last = 0;
  std::set<std::string> formats;
  for (size_t k = 0; k < w.practice.size(); ++k) {
    const std::string line = w.practice[k].ToJson().dump();
    auto it = position.find(line);
    ASSERT_NE(it, position.end()) << "not a record of sft_train.jsonl: " << line;
    if (k > 0) {
      EXPECT_GT(it->second, last) << "out of sft_train.jsonl's order: " << line;
    }
    last = it->second;
    if (w.practice[k].format == "step") {
      ++drill_seen;
    } else {
      ++others;
      formats.insert(w.practice[k].format);
    }
  }
  EXPECT_EQ(drill_seen, drill);
  EXPECT_EQ(others, drill);  // practice_others_percent: 100
  EXPECT_GT(formats.size(), 10u) << "the draw should reach every kind of record";

  TinyWorldConfig c = SmallConfig();
  c.sft.practice_others_percent = 50;
  auto half = GenerateTinyWorld(c);
  ASSERT_TRUE(half.ok()) << half.status().ToString();
  EXPECT_EQ(half->practice.size(), drill + drill / 2);
  EXPECT_EQ(SftJsonl(half->sft), SftJsonl(w.sft));  // its own stream: nothing else moves
  c.sft.practice_others_percent = 0;
  auto none = GenerateTinyWorld(c);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->practice.size(), drill);
}

// The logic-block model's data: the practice records and every RLoT record of the long train
// sums, Decompose listing the whole problem also after reference steps, and the finish check and
// Terminate after a Decompose summary; no test question is drilled.
// B1's score in a self-evaluation, and the steps left its reason names.
std::pair<int, int> B1ScoreAndStepsLeft(const std::string& completion) {
  const size_t at = completion.find("B1 score=");
  if (at == std::string::npos) return {-1, -1};
  const int score = completion[at + 9] - '0';
  const std::string reason = completion.substr(at, completion.find('\n', at) - at);
  if (reason.find("reason=done") != std::string::npos) return {score, 0};
  if (reason.find("reason=one step left") != std::string::npos) return {score, 1};
  const size_t r = reason.find("reason=");
  return {score, std::atoi(reason.c_str() + r + 7)};
}

TEST(TinyWorldSftTest, RlotDataHoldsThePracticeAndTheLongSumsCalls) {
  const TinyWorld& w = SmallWorld();
  std::multiset<std::string> practice;
  size_t practice_evals = 0;
  for (const SftRecord& r : w.practice) {
    if (r.format == "self_eval") {
      ++practice_evals;  // replaced: they read B1 the other way
    } else {
      practice.insert(r.ToJson().dump());
    }
  }
  ASSERT_GT(practice_evals, 0u);
  std::set<std::string> long_train, test_questions;
  for (const TaskItem& t : w.long_train) long_train.insert(t.id);
  for (const TaskItem& t : w.test) {
    if (!t.multiple_choice()) test_questions.insert(t.question);
  }
  // The items whose problem gets evaluated (no step yet), with their steps.
  std::map<std::string, size_t> evaluated;
  for (const TaskItem& t : w.train) {
    const std::vector<SolutionStep> steps = t.AllSteps();
    const bool tool = std::any_of(steps.begin(), steps.end(),
                                  [](const SolutionStep& s) { return s.uses_tool(); });
    if (!t.multiple_choice() && !tool && !steps.empty()) evaluated[t.id] = steps.size();
  }
  for (const TaskItem& t : w.long_train) evaluated[t.id] = t.steps.size();
  std::map<std::string, size_t> problem_evaluations;
  std::map<std::string, size_t> formats;
  size_t decompose_after = 0, check_after_summary = 0, final_after_summary = 0;
  for (const SftRecord& r : w.rlot) {
    const std::string line = r.ToJson().dump();
    if (auto it = practice.find(line); it != practice.end()) {
      practice.erase(it);
      continue;
    }
    if (r.format == "self_eval") {
      ASSERT_TRUE(evaluated.count(r.item_id)) << line;
      // B1 graded by the steps left: 3 from four, 2 from two, else 1.
      const auto [score, left] = B1ScoreAndStepsLeft(r.completion);
      EXPECT_EQ(score, left >= 4 ? 3 : (left >= 2 ? 2 : 1)) << line;
      if (r.prompt.find("(none yet)") != std::string::npos) {
        ++problem_evaluations[r.item_id];
        EXPECT_EQ(static_cast<size_t>(left), evaluated[r.item_id]) << line;
        EXPECT_NE(r.completion.find("A1 score=0"), std::string::npos) << line;
      }
      if (!long_train.count(r.item_id)) continue;
    }
    ASSERT_TRUE(long_train.count(r.item_id)) << "neither practice nor a long train sum: " << line;
    ++formats[r.format];
    if (r.format == "step") {  // a long sum's operations are often one-digit test sums
      for (const std::string& q : test_questions) {
        EXPECT_EQ(r.prompt.find(q), std::string::npos) << r.prompt;
      }
    }
    const bool after_steps = r.prompt.find("Step 1: ") != std::string::npos;
    if (r.format == "decompose") {
      EXPECT_EQ(r.completion.rfind("\n### Subtask1: Add ", 0), 0u) << r.completion;
      decompose_after += after_steps;
    }
    if (r.prompt.find(kSummaryPrefix) != std::string::npos) {
      if (r.format == "has_answer") {
        ++check_after_summary;
        EXPECT_EQ(r.completion, "\nyes");
      }
      if (r.format == "final") ++final_after_summary;
    }
  }
  EXPECT_TRUE(practice.empty()) << practice.size() << " practice records missing";
  EXPECT_EQ(problem_evaluations.size(), evaluated.size());  // one each
  for (const auto& [id, n] : problem_evaluations) EXPECT_EQ(n, 1u) << id;
  EXPECT_EQ(formats["decompose"], w.long_train.size());  // rlot_percent: 100
  EXPECT_EQ(formats["summarize"], w.long_train.size());
  size_t subtasks = 0;
  for (const TaskItem& t : w.long_train) subtasks += t.steps.size();
  EXPECT_EQ(formats["solve_subtask"], subtasks);             // every one, not one drawn
  EXPECT_EQ(formats["self_eval"], 2 * w.long_train.size());  // one after steps, the problem's
  EXPECT_GT(formats["step"], 0u);
  EXPECT_GT(decompose_after, w.long_train.size() / 2);
  EXPECT_EQ(check_after_summary, w.long_train.size());
  EXPECT_EQ(final_after_summary, w.long_train.size());
  // sft_train.jsonl keeps the old B1 (3 from two steps left) and no problem evaluations.
  for (const SftRecord& r : w.sft) {
    if (r.format != "self_eval") continue;
    EXPECT_EQ(r.prompt.find("(none yet)"), std::string::npos) << r.prompt;
    const auto [score, left] = B1ScoreAndStepsLeft(r.completion);
    EXPECT_EQ(score, left >= 2 ? 3 : (left == 1 ? 2 : 1)) << r.completion;
  }
}

TEST(TinyWorldSftTest, UnknownFormatIsRefused) {
  SftConfig c;
  c.formats = {"cot", "poem"};
  SplitMix64 rng(1);
  auto r = MakeSftRecords(SmallWorld().train.front(), c, rng);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("poem"), std::string::npos);
}

}  // namespace
}  // namespace allot::tinyworld
