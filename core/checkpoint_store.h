// CheckpointStore: atomic, verified, retained checkpoints under runs/<name>/checkpoints/.
//
// A save writes every file into a staging directory, fsyncs the files, writes manifest.json
// (each file's sha256 and size, the step and the allot version), fsyncs, and renames the staging
// directory to step-<N>. A process killed at any moment leaves either no new checkpoint or a
// complete one; the previous checkpoint is never touched before the new one is in place.
// Loading walks from the newest step down and skips, with a warning, any checkpoint whose
// manifest or hashes do not verify.
//
// Thread-compatible: one writer per directory.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace allot {

struct CheckpointInfo {
  int64_t step = 0;
  std::string path;           // the step directory
  std::string allot_version;  // of the writer
};

// A parsed manifest.json. Every field is type-checked: a manifest is data from disk.
struct CheckpointManifest {
  struct File {
    std::string name;  // relative to the step directory, never escaping it
    std::string sha256;
    uint64_t bytes = 0;
  };
  int64_t step = 0;
  std::string allot_version;
  std::vector<File> files;
};

// Parses and checks manifest.json text; `where` (its path) prefixes every error (DataLoss).
Result<CheckpointManifest> ParseCheckpointManifest(std::string_view text, const std::string& where);

class CheckpointStore {
 public:
  // keep_last <= 0 keeps every checkpoint.
  CheckpointStore(std::string dir, int keep_last);

  // Fills a staging directory through `write` and commits it as step `step`. Returns the path.
  Result<std::string> Save(int64_t step,
                           const std::function<Status(const std::string& staging_dir)>& write);

  // The newest checkpoint that verifies. `skipped` receives one line per rejected checkpoint.
  Result<CheckpointInfo> LoadLatest(std::vector<std::string>* skipped = nullptr) const;

  // Checks the manifest and every file's size and sha256.
  Result<CheckpointInfo> Verify(const std::string& step_dir) const;

  // Steps present on disk (verified or not), ascending.
  std::vector<int64_t> Steps() const;

  const std::string& dir() const { return dir_; }
  static std::string StepDirName(int64_t step);

 private:
  void RemoveStale() const;
  void ApplyRetention();

  std::string dir_;
  int keep_last_;
};

}  // namespace allot
