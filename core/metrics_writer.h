// MetricsWriter: one JSON object per step in metrics.jsonl, and the same scalars as TensorBoard
// events. Non-finite values are written as JSON null (and skipped for TensorBoard).
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "core/tensorboard_writer.h"

namespace allot {

using Scalars = std::vector<std::pair<std::string, double>>;

class MetricsWriter {
 public:
  // tensorboard_dir may be empty to write JSONL only.
  static Result<std::unique_ptr<MetricsWriter>> Open(const std::string& jsonl_path,
                                                     const std::string& tensorboard_dir);
  ~MetricsWriter();
  MetricsWriter(const MetricsWriter&) = delete;
  MetricsWriter& operator=(const MetricsWriter&) = delete;

  Status Log(int64_t step, const Scalars& values);

 private:
  MetricsWriter() = default;
  std::string path_;
  FILE* jsonl_ = nullptr;
  std::unique_ptr<TensorBoardWriter> tb_;
};

// A run resumed from its step-`step` checkpoint trains the steps after it again: the records of
// those steps that the interrupted process wrote would otherwise appear twice. Drops them from
// metrics.jsonl (with a torn last line) and from every event file in tensorboard_dir (may be
// empty or absent). Missing files are fine: nothing was written yet.
Status TruncateMetricsAfter(const std::string& jsonl_path, const std::string& tensorboard_dir,
                            int64_t step);

}  // namespace allot
