// TensorBoard event files written by allot itself: TFRecord framing (length, masked CRC-32C of
// the length, payload, masked CRC-32C of the payload) around serialized Event protos.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace allot {

class TensorBoardWriter {
 public:
  // Creates <dir>/events.out.tfevents.<unix seconds>.<host> and writes the version event.
  static Result<std::unique_ptr<TensorBoardWriter>> Create(const std::string& dir);
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;

  Status AddScalar(const std::string& tag, double value, int64_t step);
  Status Flush();
  const std::string& path() const { return path_; }

 private:
  TensorBoardWriter() = default;
  Status WriteRecord(const std::string& payload);
  std::string path_;
  FILE* file_ = nullptr;
};

// One decoded event, for tests and `allot` tooling.
struct TensorBoardEvent {
  double wall_time = 0;
  int64_t step = 0;
  std::string file_version;
  std::vector<std::pair<std::string, float>> scalars;
};

// Reads an event file back, verifying both CRCs of every record.
Result<std::vector<TensorBoardEvent>> ReadTensorBoardEvents(const std::string& path);

// Rewrites the event file at `path` (atomically) without the events of steps after `step`, for a
// run that resumes from its step-`step` checkpoint and writes those steps again. A torn or corrupt
// record ends the file there: it is what a process killed mid-write leaves.
Status TruncateTensorBoardEventsAfter(const std::string& path, int64_t step);

}  // namespace allot
