// Run directory, logging redaction and the progress bar.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "core/atomic_file.h"
#include "core/logging.h"
#include "core/progress_bar.h"
#include "core/run_directory.h"
#include "tests/core/temp_dir.h"

namespace allot {
namespace {

using testing::TempDir;

TEST(RunDirectoryTest, CreatesLayoutAndRefusesExisting) {
  TempDir dir;
  auto rd = RunDirectory::Open(dir.path(), "exp1", false);
  ASSERT_TRUE(rd.ok()) << rd.status().message();
  EXPECT_TRUE(std::filesystem::is_directory(rd->logs_dir()));
  EXPECT_TRUE(std::filesystem::is_directory(rd->checkpoints_dir()));
  EXPECT_TRUE(std::filesystem::is_directory(rd->tensorboard_dir()));
  auto again = RunDirectory::Open(dir.path(), "exp1", false);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kAlreadyExists);
  EXPECT_NE(again.status().message().find("allot resume exp1"), std::string::npos);
  EXPECT_TRUE(RunDirectory::Open(dir.path(), "exp1", true).ok());
  EXPECT_EQ(RunDirectory::Open(dir.path(), "nope", true).status().code(), StatusCode::kNotFound);
}

TEST(RunDirectoryTest, RejectsBadNames) {
  TempDir dir;
  for (const char* bad : {"", "..", "a/b", "x y", "../../etc"}) {
    EXPECT_FALSE(RunDirectory::Open(dir.path(), bad, false).ok()) << bad;
  }
}

TEST(LoggingTest, SecretsAreRedactedInLogFiles) {
  TempDir dir;
  ASSERT_TRUE(SetupLogging("info", dir.Join("run.log")).ok());
  RegisterSecret("sk-test-abcdef123");
  spdlog::info("calling endpoint with key sk-test-abcdef123 now");
  spdlog::default_logger()->flush();
  std::string text;
  ASSERT_TRUE(ReadFile(dir.Join("run.log"), &text).ok());
  EXPECT_EQ(text.find("sk-test-abcdef123"), std::string::npos) << text;
  EXPECT_NE(text.find("with key <redacted> now"), std::string::npos) << text;
  EXPECT_EQ(Redact("a sk-test-abcdef123 b sk-test-abcdef123"), "a <redacted> b <redacted>");
  EXPECT_FALSE(SetupLogging("loud").ok());
  ASSERT_TRUE(SetupLogging("warn").ok());
}

TEST(ProgressBarTest, RendersRateEtaAndReward) {
  ProgressBar bar(100, "train", stderr, false);
  bar.Start(0);
  const std::string line = bar.Render(50, 10.0);
  EXPECT_NE(line.find("50/100"), std::string::npos) << line;
  EXPECT_NE(line.find("5.00 it/s"), std::string::npos) << line;
  EXPECT_NE(line.find("eta 00:10"), std::string::npos) << line;
  EXPECT_EQ(line.find('['), std::string::npos) << "no bar glyphs in plain mode";
}

TEST(ProgressBarTest, PlainModeWritesLinesNotCarriageReturns) {
  char* buf = nullptr;
  size_t len = 0;
  FILE* mem = open_memstream(&buf, &len);
  {
    ProgressBar bar(3, "train", mem, false, 0.0);
    bar.Start(0);
    bar.Update(1, 0.25);
    bar.Update(2);
    bar.Update(3);
    bar.Finish();
  }
  std::fclose(mem);
  std::string out(buf, len);
  free(buf);
  EXPECT_EQ(out.find('\r'), std::string::npos);
  EXPECT_NE(out.find("reward 0.2500"), std::string::npos) << out;
  // One line per update; Finish does not repeat the final step it already printed.
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 3) << out;
}

// Work added and advanced from several threads at once: every step is counted once, and the
// last line printed is the total.
TEST(ProgressBarTest, AdvanceCountsEveryStepFromConcurrentThreads) {
  char* buf = nullptr;
  size_t len = 0;
  FILE* mem = open_memstream(&buf, &len);
  {
    ProgressBar bar(0, "eval", mem, false, 0.0);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      bar.AddTotal(100);  // each evaluation adds its own work
      threads.emplace_back([&bar] {
        for (int i = 0; i < 100; ++i) bar.Advance();
      });
    }
    for (auto& t : threads) t.join();
    bar.Finish();
  }
  std::fclose(mem);
  std::string out(buf, len);
  free(buf);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 400) << out;
  EXPECT_NE(out.rfind("eval 400/400 (100%)"), std::string::npos) << out.substr(out.size() - 200);
  EXPECT_EQ(out.find("401/400"), std::string::npos);
}

TEST(ProgressBarTest, TtyModeUsesABar) {
  ProgressBar bar(10, "train", stderr, true);
  bar.Start(0);
  EXPECT_NE(bar.Render(5, 1.0).find("[############............]"), std::string::npos);
  EXPECT_EQ(FormatDuration(3725), "1:02:05");
}

}  // namespace
}  // namespace allot
