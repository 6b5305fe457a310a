#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
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

}  // namespace
}  // namespace allot
