#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/crc32c.h"
#include "core/metrics_writer.h"
#include "core/tensorboard_writer.h"
#include "tests/core/temp_dir.h"

namespace allot {
namespace {

using testing::TempDir;

TEST(Crc32cTest, KnownVectors) {
  // RFC 3720 B.4 test vectors.
  EXPECT_EQ(Crc32c("123456789"), 0xe3069283u);
  std::string zeros(32, '\0');
  EXPECT_EQ(Crc32c(zeros), 0x8a9136aau);
  std::string ones(32, '\xff');
  EXPECT_EQ(Crc32c(ones), 0x62a8ab43u);
}

TEST(Crc32cTest, MaskRoundTrip) {
  for (uint32_t v : {0u, 1u, 0xdeadbeefu, 0xffffffffu}) EXPECT_EQ(UnmaskCrc(MaskCrc(v)), v);
}

TEST(TensorBoardTest, EventsRoundTrip) {
  TempDir dir;
  std::string path;
  {
    auto w = TensorBoardWriter::Create(dir.path());
    ASSERT_TRUE(w.ok()) << w.status().message();
    path = (*w)->path();
    EXPECT_NE(path.find("events.out.tfevents."), std::string::npos);
    for (int step = 0; step < 5; ++step) {
      ASSERT_TRUE((*w)->AddScalar("train/reward", step * 0.5, step).ok());
    }
    ASSERT_TRUE((*w)->Flush().ok());
  }
  auto events = ReadTensorBoardEvents(path);
  ASSERT_TRUE(events.ok()) << events.status().message();
  ASSERT_EQ(events->size(), 6u);
  EXPECT_EQ((*events)[0].file_version, "brain.Event:2");
  for (int step = 0; step < 5; ++step) {
    const auto& e = (*events)[step + 1];
    EXPECT_EQ(e.step, step);
    ASSERT_EQ(e.scalars.size(), 1u);
    EXPECT_EQ(e.scalars[0].first, "train/reward");
    EXPECT_FLOAT_EQ(e.scalars[0].second, step * 0.5f);
    EXPECT_GT(e.wall_time, 1.6e9);
  }
}

TEST(TensorBoardTest, CorruptionIsDetected) {
  TempDir dir;
  std::string path;
  {
    auto w = TensorBoardWriter::Create(dir.path());
    ASSERT_TRUE(w.ok());
    path = (*w)->path();
    ASSERT_TRUE((*w)->AddScalar("x", 1.0, 1).ok());
  }
  std::string data;
  ASSERT_TRUE(ReadFile(path, &data).ok());
  // Flip one payload byte of the last record: its CRC must catch it.
  std::string bad = data;
  bad[bad.size() - 6] ^= 0x40;
  ASSERT_TRUE(WriteFileAtomic(path, bad).ok());
  auto events = ReadTensorBoardEvents(path);
  ASSERT_FALSE(events.ok());
  EXPECT_NE(events.status().message().find("CRC"), std::string::npos);
  // Truncation is caught too.
  ASSERT_TRUE(WriteFileAtomic(path, data.substr(0, data.size() - 3)).ok());
  EXPECT_NE(ReadTensorBoardEvents(path).status().message().find("truncated"), std::string::npos);
}

TEST(MetricsWriterTest, WritesJsonlAndTensorBoard) {
  TempDir dir;
  {
    auto m = MetricsWriter::Open(dir.Join("metrics.jsonl"), dir.Join("tb"));
    ASSERT_TRUE(m.ok());
    ASSERT_TRUE((*m)->Log(1, {{"reward", 0.5}, {"loss", 2.0}}).ok());
    ASSERT_TRUE((*m)->Log(2, {{"reward", std::nan("")}}).ok());
  }
  std::ifstream in(dir.Join("metrics.jsonl"));
  std::string line;
  std::vector<nlohmann::json> lines;
  while (std::getline(in, line)) lines.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["step"], 1);
  EXPECT_DOUBLE_EQ(lines[0]["reward"].get<double>(), 0.5);
  EXPECT_TRUE(lines[1]["reward"].is_null());
  int tb_files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.Join("tb"))) {
    auto events = ReadTensorBoardEvents(e.path().string());
    ASSERT_TRUE(events.ok());
    EXPECT_EQ(events->size(), 3u);  // version + two scalars (NaN skipped)
    ++tb_files;
  }
  EXPECT_EQ(tb_files, 1);
}

// A run killed after writing step 5 and resumed from its step-4 checkpoint writes step 5 again.
// Catches: a resume that appends to the old records (step 5 twice in metrics.jsonl and in
// TensorBoard), a truncation that drops the checkpoint's own step, or a torn last line (the
// killed process's half-written record) left in front of the resumed run's first record.
TEST(MetricsWriterTest, ResumeRewritesTheStepsAfterTheCheckpoint) {
  TempDir dir;
  const std::string jsonl = dir.Join("metrics.jsonl");
  {
    auto m = MetricsWriter::Open(jsonl, dir.Join("tb"));
    ASSERT_TRUE(m.ok());
    for (int step = 1; step <= 5; ++step) ASSERT_TRUE((*m)->Log(step, {{"reward", step}}).ok());
  }
  {
    std::ofstream torn(jsonl, std::ios::app);
    torn << "{\"step\":6,\"rew";
  }
  ASSERT_TRUE(TruncateMetricsAfter(jsonl, dir.Join("tb"), 4).ok());
  {
    auto m = MetricsWriter::Open(jsonl, dir.Join("tb"));
    ASSERT_TRUE(m.ok());
    for (int step = 5; step <= 6; ++step)
      ASSERT_TRUE((*m)->Log(step, {{"reward", 10 * step}}).ok());
  }
  std::ifstream in(jsonl);
  std::string line;
  std::vector<int64_t> steps;
  std::vector<double> rewards;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    steps.push_back(j["step"].get<int64_t>());
    rewards.push_back(j["reward"].get<double>());
  }
  EXPECT_EQ(steps, (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(rewards, (std::vector<double>{1, 2, 3, 4, 50, 60}));
  std::map<int64_t, std::vector<float>> tb;  // step -> values over every event file
  for (const auto& e : std::filesystem::directory_iterator(dir.Join("tb"))) {
    auto events = ReadTensorBoardEvents(e.path().string());
    ASSERT_TRUE(events.ok()) << events.status().message();
    for (const auto& ev : *events) {
      for (const auto& [tag, v] : ev.scalars) tb[ev.step].push_back(v);
    }
  }
  ASSERT_EQ(tb.size(), 6u);
  for (int64_t step = 1; step <= 6; ++step) {
    ASSERT_EQ(tb[step].size(), 1u) << "step " << step;
    EXPECT_FLOAT_EQ(tb[step][0], step <= 4 ? step : 10 * step);
  }
}

// A process killed mid-write leaves a torn event record; the rewrite ends the file before it, so
// the file reads back. Catches: a truncation that refuses the file or keeps the torn bytes.
TEST(TensorBoardTest, TruncateDropsLaterStepsAndATornRecord) {
  TempDir dir;
  std::string path;
  {
    auto w = TensorBoardWriter::Create(dir.path());
    ASSERT_TRUE(w.ok());
    path = (*w)->path();
    for (int step = 1; step <= 3; ++step) ASSERT_TRUE((*w)->AddScalar("x", step, step).ok());
  }
  std::string data;
  ASSERT_TRUE(ReadFile(path, &data).ok());
  ASSERT_TRUE(WriteFileAtomic(path, data.substr(0, data.size() - 3)).ok());
  ASSERT_TRUE(TruncateTensorBoardEventsAfter(path, 1).ok());
  auto events = ReadTensorBoardEvents(path);
  ASSERT_TRUE(events.ok()) << events.status().message();
  ASSERT_EQ(events->size(), 2u);  // the version event and step 1
  EXPECT_EQ((*events)[0].file_version, "brain.Event:2");
  EXPECT_EQ((*events)[1].step, 1);
}

}  // namespace
}  // namespace allot
