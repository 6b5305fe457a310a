#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "datasets/jsonl_loader.h"
#include "datasets/sampler.h"

namespace allot::datasets {
namespace {

std::string DataPath(const std::string& name) {
  return std::string(ALLOT_TEST_DATA_DIR) + "/datasets/" + name;
}

Dataset Load(const std::string& preset, const std::string& file = "") {
  DatasetConfig c;
  c.preset = preset;
  c.path = DataPath(file.empty() ? preset + ".jsonl" : file);
  auto ds = LoadJsonl(c);
  EXPECT_TRUE(ds.ok()) << ds.status().ToString();
  return ds.ok() ? *ds : Dataset{};
}

TEST(DatasetPresetTest, Gsm8k) {
  Dataset ds = Load("gsm8k");
  ASSERT_EQ(ds.examples.size(), 3u);
  EXPECT_EQ(ds.examples[0].answer, "18");
  EXPECT_EQ(ds.examples[0].answer_format, "number");
  EXPECT_EQ(ds.examples[0].solution.rfind("4 trays hold", 0), 0u);
  EXPECT_EQ(ds.examples[1].answer, "2500");  // thousands separator dropped
  EXPECT_EQ(ds.examples[2].id, DataPath("gsm8k.jsonl") + ":3");
}

TEST(DatasetPresetTest, MathTakesBoxedAnswerWhenAbsent) {
  Dataset ds = Load("math");
  ASSERT_EQ(ds.examples.size(), 3u);
  EXPECT_EQ(ds.examples[0].answer, "1");
  EXPECT_EQ(ds.examples[1].answer, "5\\sqrt{2}");
  EXPECT_EQ(ds.examples[1].id, "test/algebra/1.json");
  EXPECT_EQ(ds.examples[2].answer, "\\frac{1}{2}");  // nested braces
  EXPECT_EQ(ds.examples[0].extra["level"], "Level 1");
  EXPECT_EQ(ds.examples[0].answer_format, "boxed");
  EXPECT_EQ(Load("math500", "math.jsonl").examples.size(), 3u);
}

TEST(DatasetPresetTest, CommonsenseQaBothShapes) {
  Dataset ds = Load("commonsenseqa");
  ASSERT_EQ(ds.examples.size(), 2u);
  EXPECT_EQ(ds.examples[0].question, "Where would you most likely keep a winter coat in summer?");
  EXPECT_EQ(ds.examples[0].options.size(), 5u);
  EXPECT_EQ(ds.examples[0].options[0], "closet");
  EXPECT_EQ(ds.examples[0].answer, "A");
  EXPECT_EQ(ds.examples[1].options[1], "scissors");
  EXPECT_EQ(ds.examples[1].answer, "B");
  EXPECT_EQ(
      ds.examples[1].PromptText(),
      "What do people use to cut paper?\n\nA) spoon\nB) scissors\nC) pillow\nD) cloud\nE) soup");
}

TEST(DatasetPresetTest, MedQaMawpsCollegeMath) {
  Dataset med = Load("medqa");
  ASSERT_EQ(med.examples.size(), 2u);
  EXPECT_EQ(med.examples[0].answer, "C");
  EXPECT_EQ(med.examples[0].options[2], "Alpha blockers");
  EXPECT_EQ(med.examples[1].options.size(), 5u);

  Dataset mawps = Load("mawps");
  ASSERT_EQ(mawps.examples.size(), 2u);
  EXPECT_EQ(mawps.examples[0].answer, "8.0");
  EXPECT_EQ(mawps.examples[0].id, "101");
  EXPECT_EQ(mawps.examples[1].answer, "5");

  Dataset college = Load("collegemath");
  ASSERT_EQ(college.examples.size(), 2u);
  EXPECT_EQ(college.examples[0].answer, "-6");
  EXPECT_EQ(college.examples[1].answer, "6");
}

TEST(DatasetPresetTest, GpqaShufflesOptionsDeterministically) {
  Dataset a = Load("gpqa");
  Dataset b = Load("gpqa");
  ASSERT_EQ(a.examples.size(), 4u);
  std::set<std::string> letters;
  for (size_t i = 0; i < a.examples.size(); ++i) {
    const Example& ex = a.examples[i];
    ASSERT_EQ(ex.options.size(), 4u);
    EXPECT_EQ(ex.options, b.examples[i].options);  // same seed, same order
    const size_t idx = static_cast<size_t>(ex.answer[0] - 'A');
    ASSERT_LT(idx, 4u);
    letters.insert(ex.answer);
  }
  EXPECT_EQ(a.examples[0].options[static_cast<size_t>(a.examples[0].answer[0] - 'A')],
            "the fluxon");
  EXPECT_EQ(a.examples[1].options[static_cast<size_t>(a.examples[1].answer[0] - 'A')], "4");
  EXPECT_GT(letters.size(), 1u);  // the correct option is not always in the same place
  DatasetConfig c;
  c.preset = "gpqa";
  c.path = DataPath("gpqa.jsonl");
  c.seed = 7;
  auto other = LoadJsonl(c);
  ASSERT_TRUE(other.ok());
  bool differs = false;
  for (size_t i = 0; i < 4; ++i) differs |= other->examples[i].options != a.examples[i].options;
  EXPECT_TRUE(differs);
}

TEST(DatasetPresetTest, StrategyQaMmluAimeTrajectories) {
  Dataset sqa = Load("strategyqa");
  EXPECT_EQ(sqa.examples[0].answer, "no");
  EXPECT_EQ(sqa.examples[1].answer, "yes");
  EXPECT_EQ(sqa.examples[0].answer_format, "yesno");

  Dataset mmlu = Load("mmlu_stem");
  ASSERT_EQ(mmlu.examples.size(), 3u);
  EXPECT_EQ(mmlu.examples[1].answer, "C");
  EXPECT_EQ(mmlu.examples[1].extra["subject"], "high_school_biology");

  DatasetConfig c;
  c.preset = "mmlu_stem";
  c.path = DataPath("mmlu_stem.jsonl");
  c.subjects = {"college_mathematics", "computer_security"};
  auto filtered = LoadJsonl(c);
  ASSERT_TRUE(filtered.ok());
  EXPECT_EQ(filtered->examples.size(), 2u);
  EXPECT_EQ(filtered->filtered, 1u);

  Dataset aime = Load("aime");
  EXPECT_EQ(aime.examples[0].answer, "401");
  EXPECT_EQ(aime.examples[1].answer, "24");
  EXPECT_EQ(aime.examples[0].id, "2099-I-1");
  EXPECT_EQ(Load("amc", "aime.jsonl").examples.size(), 2u);

  Dataset r1 = Load("openr1");
  ASSERT_EQ(r1.examples.size(), 2u);
  ASSERT_EQ(r1.examples[0].trajectories.size(), 1u);  // only the verified one
  EXPECT_NE(r1.examples[0].trajectories[0].find("3+4=7"), std::string::npos);
  EXPECT_EQ(r1.examples[1].answer, "12");
  EXPECT_EQ(Load("limo").examples[0].answer, "6");
}

TEST(DatasetLoaderTest, BadLineIsAnErrorNamingFileAndLine) {
  DatasetConfig c;
  c.preset = "gsm8k";
  c.path = DataPath("gsm8k_bad.jsonl");
  auto ds = LoadJsonl(c);
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().message(), c.path + ":2: invalid JSON");
}

TEST(DatasetLoaderTest, SkipBadLinesCountsAndReports) {
  DatasetConfig c;
  c.preset = "gsm8k";
  c.path = DataPath("gsm8k_bad.jsonl");
  c.skip_bad_lines = true;
  auto ds = LoadJsonl(c);
  ASSERT_TRUE(ds.ok());
  EXPECT_EQ(ds->examples.size(), 2u);
  EXPECT_EQ(ds->skipped, 2u);
  ASSERT_EQ(ds->skipped_messages.size(), 2u);
  EXPECT_EQ(ds->skipped_messages[1], c.path + ":3: field 'answer' has no '#### <answer>'");
}

TEST(DatasetLoaderTest, CustomMappingAndErrors) {
  FieldMapping m;
  m.question = {"q.text"};
  m.answer = {"a"};
  m.answer_format = "number";
  auto ex = ParseExample(R"({"q": {"text": "  1+1?  "}, "a": 2})", m, "f:1", 0);
  ASSERT_TRUE(ex.ok());
  EXPECT_EQ(ex->question, "1+1?");
  EXPECT_EQ(ex->answer, "2");
  EXPECT_EQ(ParseExample(R"({"q": {"text": "x"}})", m, "f:2", 0).status().message(),
            "f:2: missing answer (tried 'a')");
  EXPECT_EQ(ParseExample(R"([1])", m, "f:3", 0).status().message(), "f:3: expected a JSON object");
  m.options = {"opts"};
  m.answer_format = "choice";
  EXPECT_EQ(ParseExample(R"({"q": {"text": "x"}, "a": "F", "opts": ["u", "v"]})", m, "f:4", 0)
                .status()
                .message(),
            "f:4: answer 'F' is not the letter of an option");
  EXPECT_FALSE(PresetMapping("nope").ok());
  DatasetConfig c;
  c.path = DataPath("does_not_exist.jsonl");
  EXPECT_EQ(LoadJsonl(c).status().code(), StatusCode::kNotFound);
}

TEST(LastBoxedTest, NestedAndMissing) {
  EXPECT_EQ(LastBoxed("a \\boxed{1} then \\boxed{\\frac{a}{b}}"), "\\frac{a}{b}");
  EXPECT_EQ(LastBoxed("\\fbox{7}"), "7");
  EXPECT_EQ(LastBoxed("none"), "");
  EXPECT_EQ(LastBoxed("\\boxed{unclosed"), "");
}

TEST(ShardedSamplerTest, ShardsPartitionTheEpoch) {
  const size_t n = 103;
  std::vector<size_t> all;
  for (int64_t rank = 0; rank < 2; ++rank) {
    for (int64_t worker = 0; worker < 3; ++worker) {
      SamplerConfig c;
      c.rank = rank;
      c.world_size = 2;
      c.worker = worker;
      c.num_workers = 3;
      auto s = ShardedSampler::Create(n, c);
      ASSERT_TRUE(s.ok());
      EXPECT_EQ(s->shard_size(), 17u);  // 103 / 6, remainder dropped
      for (size_t i = 0; i < s->shard_size(); ++i) all.push_back(s->Next());
    }
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::unique(all.begin(), all.end()), all.end());  // no overlap
  EXPECT_EQ(all.size(), 102u);
}

TEST(ShardedSamplerTest, DeterministicAndReshuffledPerEpoch) {
  SamplerConfig c;
  auto a = ShardedSampler::Create(50, c);
  auto b = ShardedSampler::Create(50, c);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->EpochOrder(0), b->EpochOrder(0));
  EXPECT_NE(a->EpochOrder(0), a->EpochOrder(1));
  std::vector<size_t> e0 = a->EpochOrder(0);
  std::vector<size_t> sorted = e0;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < 50; ++i) EXPECT_EQ(sorted[i], i);
  c.seed = 43;
  EXPECT_NE(ShardedSampler::Create(50, c)->EpochOrder(0), e0);
  c.shuffle = false;
  EXPECT_EQ(ShardedSampler::Create(50, c)->EpochOrder(0)[7], 7u);
}

TEST(ShardedSamplerTest, CursorResumesExactly) {
  SamplerConfig c;
  c.world_size = 2;
  c.rank = 1;
  auto s = ShardedSampler::Create(21, c);
  ASSERT_TRUE(s.ok());
  for (int i = 0; i < 13; ++i) s->Next();  // into the second epoch
  const nlohmann::json state = nlohmann::json::parse(s->SaveState().dump());
  EXPECT_EQ(state["epoch"], 1);
  std::vector<size_t> expected;
  for (int i = 0; i < 25; ++i) expected.push_back(s->Next());

  auto resumed = ShardedSampler::Create(21, c);
  ASSERT_TRUE(resumed->LoadState(state).ok());
  std::vector<size_t> got;
  for (int i = 0; i < 25; ++i) got.push_back(resumed->Next());
  EXPECT_EQ(got, expected);

  auto other = ShardedSampler::Create(22, c);
  Status st = other->LoadState(state);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("'dataset_size' was 21 when saved, now 22"), std::string::npos);
}

TEST(ShardedSamplerTest, RejectsImpossibleShards) {
  SamplerConfig c;
  c.world_size = 4;
  c.rank = 4;
  EXPECT_FALSE(ShardedSampler::Create(10, c).ok());
  c.rank = 0;
  EXPECT_FALSE(ShardedSampler::Create(3, c).ok());
  EXPECT_FALSE(ShardedSampler::Create(0, SamplerConfig{}).ok());
}

}  // namespace
}  // namespace allot::datasets
