// DqnEpisodeLog: the navigator's training metrics, accumulated over the episodes between two
// log lines: episode return and steps, the action histogram (RLoT Table 5's
// blocks), Q mean, TD error and loss of the updates, epsilon, lr, and the process reward per
// non-terminal step, and failed episodes by reason (failures/<reason>; failures/trained: the
// scored policy failures replay kept). The single-process and the distributed trainer share it.
// Not thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <string>

#include "core/status.h"

namespace allot {
class MetricsWriter;
}

namespace allot::trainer {

class DqnLearner;
struct UpdateStats;

class DqnEpisodeLog {
 public:
  void AddStep(int applied_action, float reward, bool done);
  void AddUpdate(const UpdateStats& stats);
  void EndEpisode(double episode_return, int64_t steps);
  // A failed episode under its reason ("format_error"); `trained`: a scored policy failure that
  // reached replay (it also ends with EndEpisode), else dropped.
  void AddFailure(const std::string& reason, bool trained);
  // Writes the window's means at `episode` and starts a new window.
  Status Flush(MetricsWriter& metrics, const DqnLearner& learner, int64_t episode);
  // Mean return over the last 100 episodes.
  double RecentMeanReturn() const;

 private:
  std::deque<double> recent_;
  std::array<int64_t, 5> histogram_{};
  std::map<std::string, int64_t> failures_;
  int64_t failures_trained_ = 0;
  double q_ = 0, td_ = 0, loss_ = 0, prm_ = 0, return_ = 0;
  int64_t updates_ = 0, steps_ = 0, prm_steps_ = 0, episodes_ = 0;
};

// RLoT's block names for actions 0..4.
const char* BlockName(int action);

}  // namespace allot::trainer
