// RunDirectory: runs/<name>/ with config.yaml (resolved, redacted), metrics.jsonl, TensorBoard
// event files under tb/, logs/ and checkpoints/.
#pragma once

#include <string>

#include "core/status.h"

namespace allot {

class RunDirectory {
 public:
  // Creates root/name. An existing run is refused unless `resume` is true; resuming a run that
  // does not exist is refused too. Names are limited to [A-Za-z0-9._-].
  static Result<RunDirectory> Open(const std::string& root, const std::string& name, bool resume);

  const std::string& path() const { return path_; }
  const std::string& name() const { return name_; }
  std::string config_path() const { return path_ + "/config.yaml"; }
  std::string metrics_path() const { return path_ + "/metrics.jsonl"; }
  std::string tensorboard_dir() const { return path_ + "/tb"; }
  std::string logs_dir() const { return path_ + "/logs"; }
  std::string log_path() const { return path_ + "/logs/allot.log"; }
  std::string checkpoints_dir() const { return path_ + "/checkpoints"; }
  std::string exports_dir() const { return path_ + "/exports"; }

  // Writes the resolved (already redacted) config atomically.
  Status WriteConfig(const std::string& yaml) const;

 private:
  std::string path_;
  std::string name_;
};

Status ValidateRunName(const std::string& name);

}  // namespace allot
