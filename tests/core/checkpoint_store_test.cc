#include "core/checkpoint_store.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

#include "core/atomic_file.h"
#include "tests/core/temp_dir.h"

namespace allot {
namespace {

using testing::TempDir;
namespace fs = std::filesystem;

// Deterministic content for a step, so a loaded checkpoint can be checked byte for byte.
std::string Payload(int64_t step, size_t size) {
  std::string s(size, '\0');
  uint64_t x = 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(step + 1);
  for (auto& c : s) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c = static_cast<char>(x);
  }
  return s;
}

Status WriteStep(const std::string& dir, int64_t step, size_t size) {
  ALLOT_RETURN_IF_ERROR(WriteFileAtomic(dir + "/weights.bin", Payload(step, size)));
  fs::create_directories(dir + "/optim");
  return WriteFileAtomic(dir + "/optim/state.bin", Payload(step + 1000, size / 4));
}

bool ContentMatches(const CheckpointInfo& info, size_t size) {
  std::string a, b;
  if (!ReadFile(info.path + "/weights.bin", &a).ok()) return false;
  if (!ReadFile(info.path + "/optim/state.bin", &b).ok()) return false;
  return a == Payload(info.step, size) && b == Payload(info.step + 1000, size / 4);
}

TEST(CheckpointStoreTest, SaveThenLoadLatest) {
  TempDir dir;
  CheckpointStore store(dir.Join("ckpt"), 0);
  for (int64_t step : {10, 20, 30}) {
    auto path = store.Save(step, [&](const std::string& d) { return WriteStep(d, step, 1000); });
    ASSERT_TRUE(path.ok()) << path.status().message();
  }
  auto latest = store.LoadLatest();
  ASSERT_TRUE(latest.ok());
  EXPECT_EQ(latest->step, 30);
  EXPECT_EQ(latest->allot_version, ALLOT_VERSION);
  EXPECT_TRUE(ContentMatches(*latest, 1000));
  EXPECT_EQ(store.Steps(), (std::vector<int64_t>{10, 20, 30}));
}

TEST(CheckpointStoreTest, KeepLastRetention) {
  TempDir dir;
  CheckpointStore store(dir.path(), 2);
  for (int64_t step = 1; step <= 5; ++step) {
    ASSERT_TRUE(store.Save(step, [&](const std::string& d) { return WriteStep(d, step, 64); }).ok());
  }
  EXPECT_EQ(store.Steps(), (std::vector<int64_t>{4, 5}));
}

TEST(CheckpointStoreTest, CorruptNewestIsSkippedWithReason) {
  TempDir dir;
  CheckpointStore store(dir.path(), 0);
  for (int64_t step : {1, 2, 3}) {
    ASSERT_TRUE(store.Save(step, [&](const std::string& d) { return WriteStep(d, step, 256); }).ok());
  }
  // Step 3: flip a byte. Step 2: delete the manifest.
  {
    std::fstream f(dir.Join(CheckpointStore::StepDirName(3) + "/weights.bin"),
                   std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(10);
    f.put('X');
  }
  fs::remove(dir.Join(CheckpointStore::StepDirName(2) + "/manifest.json"));
  std::vector<std::string> skipped;
  auto latest = store.LoadLatest(&skipped);
  ASSERT_TRUE(latest.ok());
  EXPECT_EQ(latest->step, 1);
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_NE(skipped[0].find("sha256 does not match"), std::string::npos) << skipped[0];
  EXPECT_NE(skipped[1].find("manifest.json"), std::string::npos) << skipped[1];
}

// A manifest field of the wrong type used to throw nlohmann::type_error out of LoadLatest (and
// abort `allot resume`); each such checkpoint must be skipped like a bad checksum.
TEST(CheckpointStoreTest, WrongTypedManifestFieldsAreSkipped) {
  TempDir dir;
  CheckpointStore store(dir.path(), 0);
  const std::vector<std::pair<std::string, std::string>> edits = {
      {"\"bytes\": 256", "\"bytes\": \"256\""},
      {"\"format\": \"allot-checkpoint/1\"", "\"format\": 1"},
      {"\"allot_version\": \"", "\"allot_version\": [\""},
      {"\"sha256\": \"", "\"sha256\": [\""},
      {"\"bytes\": 256", "\"bytes\": -256"},
  };
  const int64_t steps = static_cast<int64_t>(edits.size()) + 1;
  for (int64_t step = 1; step <= steps; ++step) {
    ASSERT_TRUE(
        store.Save(step, [&](const std::string& d) { return WriteStep(d, step, 256); }).ok());
  }
  for (size_t i = 0; i < edits.size(); ++i) {
    const std::string path =
        dir.Join(CheckpointStore::StepDirName(static_cast<int64_t>(i) + 2) + "/manifest.json");
    std::string text;
    ASSERT_TRUE(ReadFile(path, &text).ok());
    const size_t at = text.find(edits[i].first);
    ASSERT_NE(at, std::string::npos) << text;
    text.replace(at, edits[i].first.size(), edits[i].second);
    if (edits[i].second.back() == '"' && edits[i].second.find('[') != std::string::npos) {
      const size_t close = text.find('"', at + edits[i].second.size());
      text.insert(close + 1, "]");
    }
    ASSERT_TRUE(WriteFileAtomic(path, text).ok());
  }
  std::vector<std::string> skipped;
  Result<CheckpointInfo> latest = NotFound("not run");
  ASSERT_NO_THROW(latest = store.LoadLatest(&skipped));
  ASSERT_TRUE(latest.ok()) << latest.status().message();
  EXPECT_EQ(latest->step, 1);
  EXPECT_TRUE(ContentMatches(*latest, 256));
  ASSERT_EQ(skipped.size(), edits.size());
  EXPECT_NE(skipped.back().find("files[\"weights.bin\"]"), std::string::npos) << skipped.back();
}

TEST(CheckpointStoreTest, TruncatedFileIsSkipped) {
  TempDir dir;
  CheckpointStore store(dir.path(), 0);
  ASSERT_TRUE(store.Save(1, [&](const std::string& d) { return WriteStep(d, 1, 256); }).ok());
  ASSERT_TRUE(store.Save(2, [&](const std::string& d) { return WriteStep(d, 2, 256); }).ok());
  fs::resize_file(dir.Join(CheckpointStore::StepDirName(2) + "/weights.bin"), 100);
  auto latest = store.LoadLatest();
  ASSERT_TRUE(latest.ok());
  EXPECT_EQ(latest->step, 1);
}

TEST(CheckpointStoreTest, FailedWriteLeavesNothingBehind) {
  TempDir dir;
  CheckpointStore store(dir.path(), 0);
  auto r = store.Save(7, [](const std::string&) { return Internal("disk on fire"); });
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("saving checkpoint step 7: disk on fire"), std::string::npos);
  EXPECT_TRUE(store.Steps().empty());
  EXPECT_TRUE(fs::is_empty(dir.path()));
  EXPECT_EQ(store.LoadLatest().status().code(), StatusCode::kNotFound);
}

TEST(CheckpointStoreTest, ResavingAStepReplacesIt) {
  TempDir dir;
  CheckpointStore store(dir.path(), 0);
  ASSERT_TRUE(store.Save(4, [&](const std::string& d) { return WriteStep(d, 99, 64); }).ok());
  ASSERT_TRUE(store.Save(4, [&](const std::string& d) { return WriteStep(d, 4, 64); }).ok());
  auto latest = store.LoadLatest();
  ASSERT_TRUE(latest.ok());
  EXPECT_TRUE(ContentMatches(*latest, 64));
}

TEST(CheckpointStoreTest, ManifestStepMustMatchDirectory) {
  TempDir dir;
  CheckpointStore store(dir.path(), 0);
  ASSERT_TRUE(store.Save(5, [&](const std::string& d) { return WriteStep(d, 5, 64); }).ok());
  fs::rename(dir.Join(CheckpointStore::StepDirName(5)), dir.Join(CheckpointStore::StepDirName(6)));
  EXPECT_FALSE(store.LoadLatest().ok());
}

// A child process saves checkpoints in a loop and is killed with SIGKILL at a random moment,
// many times over. Every time, the store must still load a checkpoint whose every byte is right,
// and never an older one than the last save that had completed.
TEST(CheckpointStoreIntegrationTest, KillDuringSaveNeverLosesTheLastGoodCheckpoint) {
  TempDir dir;
  const std::string ckpt_dir = dir.Join("ckpt");
  const size_t kSize = 256 * 1024;
  std::mt19937 rng(1234);
  int64_t next_step = 1;
  for (int iter = 0; iter < 40; ++iter) {
    const std::string progress = dir.Join("progress");
    fs::remove(progress);
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      CheckpointStore store(ckpt_dir, 3);
      for (int64_t step = next_step;; ++step) {
        auto r = store.Save(step, [&](const std::string& d) { return WriteStep(d, step, kSize); });
        if (!r.ok()) ::_exit(3);
        // Record the step whose save has completed. Written to a temporary file and renamed,
        // so that a kill mid-record leaves the previous record, never an empty file.
        std::ofstream(progress + ".tmp", std::ios::trunc) << step;
        std::rename((progress + ".tmp").c_str(), progress.c_str());
      }
    }
    // A save takes a few to tens of milliseconds (fsync); kill anywhere across several saves.
    std::this_thread::sleep_for(std::chrono::microseconds(1000 + rng() % 150000));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "child exited on its own with " << WEXITSTATUS(status);

    // The newest step whose save is known to have completed, in this child or an earlier one.
    int64_t completed = next_step - 1;
    std::ifstream(progress) >> completed;
    CheckpointStore store(ckpt_dir, 3);
    auto latest = store.LoadLatest();
    if (completed == 0 && !latest.ok()) continue;  // killed before the first save finished
    ASSERT_TRUE(latest.ok()) << "iteration " << iter << ": " << latest.status().message();
    EXPECT_GE(latest->step, completed) << "iteration " << iter;
    EXPECT_LE(latest->step, completed + 1) << "iteration " << iter;
    EXPECT_TRUE(ContentMatches(*latest, kSize)) << "iteration " << iter;
    next_step = latest->step + 1;
  }
  EXPECT_GT(next_step, 1) << "no save ever completed";
}

}  // namespace
}  // namespace allot
