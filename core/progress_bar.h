// A terminal progress bar: steps, rate, ETA and the last reward. When the output is not a
// terminal (CI, log files, pipes) it prints a plain line at most every `plain_interval_s`.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>

namespace allot {

class ProgressBar {
 public:
  ProgressBar(int64_t total, std::string label, FILE* out = stderr,
              std::optional<bool> force_tty = std::nullopt, double plain_interval_s = 10.0);

  // `start_step` lets a resumed run show its true position.
  void Start(int64_t start_step);
  void Update(int64_t step, std::optional<double> reward = std::nullopt);
  // `n` more steps done, from any thread (an evaluation's items, several methods at once); the
  // first call starts the clock when Start was not called.
  void Advance(int64_t n = 1);
  // `n` more steps to do, from any thread: work that joins once it is known (each concurrent
  // evaluation adds its methods x items).
  void AddTotal(int64_t n);
  void Finish();

  // The text of one update, without control characters (for tests and plain output).
  std::string Render(int64_t step, double elapsed_s) const;

 private:
  int64_t total_;
  std::string label_;
  FILE* out_;
  bool tty_;
  double plain_interval_s_;
  int64_t start_step_ = 0;
  std::optional<double> reward_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_print_;
  int64_t last_step_ = 0;
  int64_t last_printed_step_ = -1;
  bool started_ = false;
  std::mutex advance_mu_;
};

std::string FormatDuration(double seconds);  // "1:02:03" or "02:03"

}  // namespace allot
