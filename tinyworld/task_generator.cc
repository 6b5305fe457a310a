#include "tinyworld/task_generator.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>

#include "core/atomic_file.h"
#include "core/sha256.h"
#include "tinyworld/arithmetic_tasks.h"

namespace allot::tinyworld {
namespace {

bool IsNumber(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string Id(const std::string& split, const std::string& bucket, size_t n) {
  char num[24];  // any size_t fits (GCC checks the whole range)
  std::snprintf(num, sizeof(num), "%04zu", n);
  return "tw-" + split + "-" + bucket + "-" + num;
}

// Three wrong options for `value`: nearby numbers, or other names of the same sort (towns only
// of the same split, so that no train option names a test town).
std::vector<std::string> Distractors(const std::string& value, bool test,
                                     const KnowledgeWorld& world, SplitMix64& rng) {
  std::vector<std::string> pool;
  if (IsNumber(value)) {
    // Numbers within 20 of the answer; how many lie below it is drawn uniformly, so the
    // answer's rank among the options gives nothing away.
    const int64_t v = std::stoll(value);
    std::vector<int64_t> below, above;
    for (int64_t d = 1; d <= 20; ++d) {
      if (v - d >= 0) below.push_back(v - d);
      above.push_back(v + d);
    }
    rng.Shuffle(below);
    rng.Shuffle(above);
    const size_t n_below = std::min<size_t>(rng.Below(4), below.size());
    for (size_t i = 0; i < 3; ++i) {
      pool.push_back(std::to_string(i < n_below ? below[i] : above[i - n_below]));
    }
    return pool;
  } else {
    std::set<std::string> rivers, towns, trades;
    for (const Town& t : world.towns) {
      rivers.insert(t.river);
      if (t.test == test) towns.insert(t.name);
    }
    for (const Person& p : world.people) trades.insert(p.trade);
    for (const auto* sort : {&rivers, &towns, &trades}) {
      if (sort->count(value)) pool.assign(sort->begin(), sort->end());
    }
  }
  pool.erase(std::remove(pool.begin(), pool.end(), value), pool.end());
  rng.Shuffle(pool);
  if (pool.size() > 3) pool.resize(3);
  return pool;
}

// The multiple-choice twin of an open item: four options, the answer a letter.
TaskItem ChoiceVariant(const TaskItem& open, const KnowledgeWorld& world, SplitMix64& rng) {
  TaskItem mc = open;
  mc.id += "-mc";
  mc.choices = Distractors(open.value, open.split == "test", world, rng);
  const size_t at = rng.Below(mc.choices.size() + 1);
  mc.choices.insert(mc.choices.begin() + static_cast<ptrdiff_t>(at), open.value);
  mc.answer = std::string(1, static_cast<char>('A' + at));
  return mc;
}

// Each item's split and its id in that split's bucket, in order.
void Label(std::vector<TaskItem>& items, const std::string& split, const std::string& bucket) {
  for (size_t i = 0; i < items.size(); ++i) {
    items[i].split = split;
    items[i].id = Id(split, bucket, i);
  }
}

// `count` items of one arithmetic bucket whose keys are not yet in `seen`.
Result<std::vector<TaskItem>> DrawArithmetic(const std::string& bucket, size_t count,
                                             SplitMix64& rng, const std::vector<std::string>& names,
                                             std::set<std::string>& seen) {
  std::vector<TaskItem> out;
  const size_t max_attempts = 100 * count + 10000;
  for (size_t attempt = 0; out.size() < count && attempt < max_attempts; ++attempt) {
    ALLOT_ASSIGN_OR_RETURN(TaskItem item, MakeArithmeticItem(bucket, rng, names));
    if (seen.insert(item.key).second) out.push_back(std::move(item));
  }
  if (out.size() < count) {
    return ResourceExhausted("tiny world: bucket '" + bucket +
                             "' has too few distinct questions for " + std::to_string(count) +
                             " items");
  }
  return out;
}

}  // namespace

std::vector<std::string> AllBuckets() {
  std::vector<std::string> out = ArithmeticBuckets();
  for (auto& b : FactBuckets()) out.push_back(b);
  return out;
}

Result<TinyWorld> GenerateTinyWorld(const TinyWorldConfig& config) {
  const std::vector<std::string> all = AllBuckets();
  for (const auto& b : config.buckets) {
    if (std::find(all.begin(), all.end(), b) == all.end()) {
      return InvalidArgument("tiny world: buckets: unknown bucket '" + b + "'");
    }
  }
  const SplitMix64 root(static_cast<uint64_t>(config.seed));
  TinyWorld w;
  SplitMix64 kb_rng = root.Fork("knowledge");
  ALLOT_ASSIGN_OR_RETURN(w.knowledge, MakeKnowledgeWorld(config.knowledge, kb_rng));

  std::vector<TaskItem> open_train, open_test;
  for (const std::string& bucket : all) {
    if (!config.buckets.empty() &&
        std::find(config.buckets.begin(), config.buckets.end(), bucket) == config.buckets.end()) {
      continue;
    }
    SplitMix64 rng = root.Fork("bucket/" + bucket);
    std::vector<TaskItem> train, test;
    const std::vector<std::string> facts = FactBuckets();
    if (std::find(facts.begin(), facts.end(), bucket) != facts.end()) {
      test = AllFactItems(w.knowledge, bucket, "test");
      train = AllFactItems(w.knowledge, bucket, "train");
      rng.Shuffle(test);
      rng.Shuffle(train);
      test.resize(std::min<size_t>(test.size(), static_cast<size_t>(config.test_per_bucket)));
      train.resize(std::min<size_t>(train.size(), static_cast<size_t>(config.train_per_bucket)));
    } else {
      const uint64_t space = ArithmeticSpace(bucket);
      const size_t n_test = static_cast<size_t>(
          std::min<uint64_t>(static_cast<uint64_t>(config.test_per_bucket), space / 5));
      const size_t n_train = static_cast<size_t>(
          std::min<uint64_t>(static_cast<uint64_t>(config.train_per_bucket), space - n_test));
      // Test first: its questions are reserved before any train item is drawn.
      std::set<std::string> seen;
      ALLOT_ASSIGN_OR_RETURN(test,
                             DrawArithmetic(bucket, n_test, rng, w.knowledge.first_names, seen));
      ALLOT_ASSIGN_OR_RETURN(train,
                             DrawArithmetic(bucket, n_train, rng, w.knowledge.first_names, seen));
    }
    Label(test, "test", bucket);
    Label(train, "train", bucket);
    for (auto& t : test) open_test.push_back(std::move(t));
    for (auto& t : train) open_train.push_back(std::move(t));
  }

  // One stream per split, so that the test split's variants do not depend on how many train
  // items there are.
  for (auto* split : {&open_train, &open_test}) {
    SplitMix64 mc_rng =
        root.Fork(split == &open_train ? "multiple_choice_train" : "multiple_choice_test");
    std::vector<TaskItem> mc;
    for (const TaskItem& item : *split) {
      if (mc_rng.Percent(config.mc_percent)) mc.push_back(ChoiceVariant(item, w.knowledge, mc_rng));
    }
    for (auto& m : mc) split->push_back(std::move(m));
  }
  w.train = std::move(open_train);
  w.test = std::move(open_test);

  // The step drill must not turn a test question into a train record.
  std::set<std::string> held_out;
  for (const TaskItem& item : w.test) {
    if (!item.multiple_choice()) held_out.insert(item.question);
  }
  if (config.sft.fresh_names_percent < 0 || config.sft.fresh_names_percent > 100) {
    return InvalidArgument("tiny world: sft.fresh_names_percent must be in 0..100, got " +
                           std::to_string(config.sft.fresh_names_percent));
  }
  if (config.sft.fresh_names_copies < 1) {
    return InvalidArgument("tiny world: sft.fresh_names_copies must be >= 1, got " +
                           std::to_string(config.sft.fresh_names_copies));
  }
  SplitMix64 sft_rng = root.Fork("sft");
  // Its own stream, so that renaming leaves every other record's draws as they were.
  SplitMix64 fresh_rng = root.Fork("sft/fresh_names");
  FreshNames fresh(w.knowledge, fresh_rng);
  for (const TaskItem& item : w.train) {
    const bool rename = config.sft.fresh_names_percent > 0 && item.kind == "fact" &&
                        fresh_rng.Percent(config.sft.fresh_names_percent);
    if (!rename) {
      ALLOT_ASSIGN_OR_RETURN(std::vector<SftRecord> records,
                             MakeSftRecords(item, config.sft, sft_rng, held_out));
      for (auto& r : records) w.sft.push_back(std::move(r));
      continue;
    }
    for (int64_t copy = 0; copy < config.sft.fresh_names_copies; ++copy) {
      ALLOT_ASSIGN_OR_RETURN(TaskItem renamed, fresh.Rename(item));
      // The extra copies draw from the renaming stream, so sft_rng sees one item as before.
      ALLOT_ASSIGN_OR_RETURN(
          std::vector<SftRecord> records,
          MakeSftRecords(renamed, config.sft, copy == 0 ? sft_rng : fresh_rng, held_out));
      for (auto& r : records) w.sft.push_back(std::move(r));
    }
  }
  // Its own stream too, so that the practice draw leaves sft_train.jsonl as it was.
  SplitMix64 practice_rng = root.Fork("sft/practice");
  w.practice = PracticeRecords(w.sft, config.sft.practice_others_percent, practice_rng);

  // RLoT's long sums and the logic-block model's data, from streams of their own: every file
  // above keeps its bytes.
  {
    SplitMix64 rng = root.Fork("bucket/" + std::string(kLongBucket));
    std::set<std::string> seen;
    const std::string bucket(kLongBucket);
    ALLOT_ASSIGN_OR_RETURN(w.long_test,
                           DrawArithmetic(bucket, static_cast<size_t>(config.long_test), rng,
                                          w.knowledge.first_names, seen));
    ALLOT_ASSIGN_OR_RETURN(w.long_train,
                           DrawArithmetic(bucket, static_cast<size_t>(config.long_train), rng,
                                          w.knowledge.first_names, seen));
    Label(w.long_test, "test", bucket);
    Label(w.long_train, "train", bucket);
    for (const TaskItem& t : w.long_test) held_out.insert(t.question);
    SftConfig long_sft = config.sft;
    long_sft.rlot_percent = 100;
    long_sft.decompose_drill = true;
    long_sft.problem_evaluation = true;
    SplitMix64 rlot_rng = root.Fork("sft/rlot");
    // The practice mix without its self-evaluations, which read B1 the other way: each
    // tool-free train item gets its own, with the problem's evaluation (problem_evaluation),
    // from a stream of their own.
    for (const SftRecord& r : w.practice) {
      if (r.format != "self_eval") w.rlot.push_back(r);
    }
    SftConfig state_sft = long_sft;
    state_sft.formats = {"self_eval"};
    state_sft.decompose_drill = false;
    SplitMix64 state_rng = root.Fork("sft/rlot_state");
    for (const TaskItem& item : w.train) {
      if (item.multiple_choice()) continue;  // the navigator's problems are open questions
      ALLOT_ASSIGN_OR_RETURN(std::vector<SftRecord> records,
                             MakeSftRecords(item, state_sft, state_rng, held_out));
      for (auto& r : records) w.rlot.push_back(std::move(r));
    }
    for (const TaskItem& item : w.long_train) {
      ALLOT_ASSIGN_OR_RETURN(std::vector<SftRecord> records,
                             MakeSftRecords(item, long_sft, rlot_rng, held_out));
      for (auto& r : records) w.rlot.push_back(std::move(r));
    }
    rlot_rng.Shuffle(w.rlot);
  }
  return w;
}

std::string ItemsJsonl(const std::vector<TaskItem>& items) {
  std::string out;
  for (const TaskItem& t : items) out += t.ToJson().dump() + "\n";
  return out;
}

std::string CorpusJsonl(const KnowledgeWorld& world) {
  std::string out;
  for (const CorpusPage& p : world.Corpus()) {
    out += nlohmann::json{{"id", p.id}, {"title", p.title}, {"text", p.text}}.dump() + "\n";
  }
  return out;
}

std::string SftJsonl(const std::vector<SftRecord>& records) {
  std::string out;
  for (const SftRecord& r : records) out += r.ToJson().dump() + "\n";
  return out;
}

Result<std::string> WriteTinyWorld(const TinyWorld& world, const TinyWorldConfig& config,
                                   const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Unavailable("tiny world: cannot create " + dir + ": " + ec.message());
  auto only = [](const std::vector<TaskItem>& items, bool mc) {
    std::vector<TaskItem> out;
    for (const TaskItem& t : items) {
      if (t.multiple_choice() == mc) out.push_back(t);
    }
    return out;
  };
  const std::vector<std::pair<std::string, std::string>> files = {
      {"corpus.jsonl", CorpusJsonl(world.knowledge)},
      {"train.jsonl", ItemsJsonl(only(world.train, false))},
      {"test.jsonl", ItemsJsonl(only(world.test, false))},
      {"train_mc.jsonl", ItemsJsonl(only(world.train, true))},
      {"test_mc.jsonl", ItemsJsonl(only(world.test, true))},
      {"sft_train.jsonl", SftJsonl(world.sft)},
      {"sft_practice.jsonl", SftJsonl(world.practice)},
      {"long_train.jsonl", ItemsJsonl(world.long_train)},
      {"long_test.jsonl", ItemsJsonl(world.long_test)},
      {"sft_rlot.jsonl", SftJsonl(world.rlot)}};
  nlohmann::json manifest = {{"seed", config.seed}, {"generator", "allot tinyworld 1"}};
  for (const auto& [name, bytes] : files) {
    ALLOT_RETURN_IF_ERROR(WriteFileAtomic(dir + "/" + name, bytes));
    manifest["files"][name] = {{"lines", std::count(bytes.begin(), bytes.end(), '\n')},
                               {"sha256", Sha256Hex(bytes)}};
  }
  for (const auto* split : {&world.train, &world.test, &world.long_train, &world.long_test}) {
    for (const TaskItem& t : *split) {
      const std::string kind = t.multiple_choice() ? t.difficulty + "_mc" : t.difficulty;
      auto& n = manifest["counts"][t.split][kind];
      n = n.is_null() ? 1 : n.get<int64_t>() + 1;
    }
  }
  std::map<std::string, int64_t> formats;
  size_t longest = 0;  // bytes = byte-tokenizer tokens: what max_seq_len must hold (plus EOS)
  for (const SftRecord& r : world.sft) {
    ++formats[r.format];
    longest = std::max(longest, r.prompt.size() + r.completion.size());
  }
  manifest["sft_formats"] = formats;
  if (config.sft.fresh_names_percent > 0) {
    manifest["sft_fresh_names_percent"] = config.sft.fresh_names_percent;
    manifest["sft_fresh_names_copies"] = config.sft.fresh_names_copies;
  }
  manifest["sft_longest_record_bytes"] = longest;
  const std::string text = manifest.dump(2) + "\n";
  ALLOT_RETURN_IF_ERROR(WriteFileAtomic(dir + "/manifest.json", text));
  return text;
}

}  // namespace allot::tinyworld
