#include "core/progress_bar.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

namespace allot {

std::string FormatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--:--";
  auto s = static_cast<int64_t>(seconds + 0.5);
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof(buf), "%lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                  static_cast<long long>((s / 60) % 60), static_cast<long long>(s % 60));
  } else {
    std::snprintf(buf, sizeof(buf), "%02lld:%02lld", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  }
  return buf;
}

ProgressBar::ProgressBar(int64_t total, std::string label, FILE* out,
                         std::optional<bool> force_tty, double plain_interval_s)
    : total_(std::max<int64_t>(total, 0)),
      label_(std::move(label)),
      out_(out),
      tty_(force_tty ? *force_tty : ::isatty(::fileno(out)) != 0),
      plain_interval_s_(plain_interval_s) {}

void ProgressBar::Start(int64_t start_step) {
  start_step_ = start_step;
  last_step_ = start_step;
  start_ = last_print_ = std::chrono::steady_clock::now();
  started_ = true;
}

void ProgressBar::AddTotal(int64_t n) {
  std::lock_guard<std::mutex> lock(advance_mu_);
  total_ += std::max<int64_t>(n, 0);
}

void ProgressBar::Advance(int64_t n) {
  std::lock_guard<std::mutex> lock(advance_mu_);
  if (!started_) Start(0);
  Update(last_step_ + n);
}

std::string ProgressBar::Render(int64_t step, double elapsed_s) const {
  const int64_t total = std::max<int64_t>(total_, 1);
  const double frac = std::clamp(static_cast<double>(step) / total, 0.0, 1.0);
  const double done = static_cast<double>(step - start_step_);
  const double rate = elapsed_s > 0 ? done / elapsed_s : 0.0;
  const double eta = rate > 0 ? (total - step) / rate : NAN;
  char buf[256];
  std::string bar;
  if (tty_) {
    constexpr int kWidth = 24;
    const int filled = static_cast<int>(frac * kWidth);
    bar = "[" + std::string(filled, '#') + std::string(kWidth - filled, '.') + "] ";
  }
  std::snprintf(buf, sizeof(buf), "%s %s%lld/%lld (%3.0f%%) %.2f it/s elapsed %s eta %s",
                label_.c_str(), bar.c_str(), static_cast<long long>(step),
                static_cast<long long>(total), frac * 100, rate,
                FormatDuration(elapsed_s).c_str(), FormatDuration(eta).c_str());
  std::string s = buf;
  if (reward_) {
    std::snprintf(buf, sizeof(buf), " reward %.4f", *reward_);
    s += buf;
  }
  return s;
}

void ProgressBar::Update(int64_t step, std::optional<double> reward) {
  if (reward) reward_ = reward;
  last_step_ = step;
  const auto now = std::chrono::steady_clock::now();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  if (tty_) {
    if (std::chrono::duration<double>(now - last_print_).count() < 0.1 && step < total_) return;
    std::fprintf(out_, "\r\033[2K%s", Render(step, elapsed).c_str());
    std::fflush(out_);
  } else {
    if (std::chrono::duration<double>(now - last_print_).count() < plain_interval_s_ &&
        step < total_) {
      return;
    }
    std::fprintf(out_, "%s\n", Render(step, elapsed).c_str());
    std::fflush(out_);
  }
  last_print_ = now;
  last_printed_step_ = step;
}

void ProgressBar::Finish() {
  // Plain mode already printed the final step as a line of its own.
  if (!tty_ && last_printed_step_ == last_step_) return;
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::fprintf(out_, tty_ ? "\r\033[2K%s\n" : "%s\n", Render(last_step_, elapsed).c_str());
  std::fflush(out_);
}

}  // namespace allot
