// The per-level outcomes behind L_min (CogER Eq. 6-8; notes.md: "run the query at each level
// (cached) and take the lowest level whose answer is correct"), cached on disk so that a query
// is solved at each level once per run and across runs, not once per GRPO rollout.
//
// The file is JSON lines, {"key": sha256(question, reference), "level": k, "correct": b},
// appended as outcomes arrive; a torn last line (a crash mid-write) is skipped on load.
// Thread-safe.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "core/status.h"

namespace allot::envs::coger {

class LevelOutcomeCache {
 public:
  // `path` empty: in memory only. Loads the file when it exists.
  static Result<std::unique_ptr<LevelOutcomeCache>> Open(const std::string& path);

  static std::string Key(const std::string& question, const std::string& reference);
  std::optional<bool> Get(const std::string& key, int level) const;
  Status Put(const std::string& key, int level, bool correct);
  size_t size() const;

 private:
  explicit LevelOutcomeCache(std::string path) : path_(std::move(path)) {}

  std::string path_;
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, bool> outcomes_;
};

}  // namespace allot::envs::coger
