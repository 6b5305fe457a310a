// Fuzzes what a rollout worker sends the learner: trajectory chunks in any order and any
// content go through the assembler, and every trajectory that comes out, or that arrives whole,
// through the validator. Nothing may crash; a validated trajectory must stay within its limits.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "proto/allot/v1/rollout.pb.h"
#include "rollout/chunking.h"
#include "rollout/validate.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using allot::rollout::TrajectoryAssembler;
  namespace v1 = allot::v1;
  // The input is a sequence of records: a 2-byte length, then that many bytes of a serialized
  // TrajectoryChunk (or, with the top bit of the length set, of a whole Trajectory).
  TrajectoryAssembler assembler(/*max_trajectory_bytes=*/1 << 16, /*max_open=*/4);
  size_t i = 0;
  while (i + 2 <= size) {
    const size_t header = static_cast<size_t>(data[i]) << 8 | data[i + 1];
    i += 2;
    const size_t n = std::min(header & 0x7fff, size - i);
    const bool whole = (header & 0x8000) != 0;
    const uint8_t* record = data + i;
    i += n;
    if (whole) {
      v1::Trajectory t;
      if (t.ParseFromArray(record, static_cast<int>(n))) {
        (void)allot::rollout::ValidateTrajectory(t);
      }
      continue;
    }
    v1::TrajectoryChunk chunk;
    if (!chunk.ParseFromArray(record, static_cast<int>(n))) continue;
    if (!allot::rollout::ValidateTrajectoryChunk(chunk, 1 << 16).ok()) continue;
    auto done = assembler.Add(chunk);
    if (done.ok() && done->has_value()) (void)allot::rollout::ValidateTrajectory(**done);
    if (assembler.open() > 4) std::abort();  // max_open bounds what a worker can make us hold
  }
  return 0;
}
