#include "trainer/grpo/advantages.h"

#include <cmath>
#include <map>

namespace allot::trainer::grpo {

namespace {

struct Moments {
  double mean = 0.0;
  double std = 0.0;  // sample std (n - 1); 0 for n < 2
};

Moments ComputeMoments(const std::vector<double>& xs) {
  Moments m;
  if (xs.empty()) return m;
  double sum = 0.0;
  for (double x : xs) sum += x;
  m.mean = sum / static_cast<double>(xs.size());
  if (xs.size() < 2) return m;
  double ss = 0.0;
  for (double x : xs) ss += (x - m.mean) * (x - m.mean);
  m.std = std::sqrt(ss / static_cast<double>(xs.size() - 1));
  return m;
}

double Normalise(double x, const Moments& m, const AdvantageOptions& options) {
  const double centred = x - m.mean;
  return options.normalize_std ? centred / (m.std + options.eps) : centred;
}

}  // namespace

std::vector<double> GroupAdvantages(const std::vector<double>& rewards,
                                    const std::vector<int64_t>& group,
                                    const AdvantageOptions& options) {
  std::map<int64_t, std::vector<double>> members;
  for (size_t i = 0; i < rewards.size(); ++i) members[group[i]].push_back(rewards[i]);
  std::map<int64_t, Moments> moments;
  for (const auto& [g, xs] : members) moments[g] = ComputeMoments(xs);
  std::vector<double> out(rewards.size(), 0.0);
  for (size_t i = 0; i < rewards.size(); ++i) {
    if (members[group[i]].size() < 2) continue;
    out[i] = Normalise(rewards[i], moments[group[i]], options);
  }
  return out;
}

std::vector<std::vector<double>> StepAdvantages(
    const std::vector<std::vector<double>>& step_rewards, const std::vector<int64_t>& group,
    const AdvantageOptions& options) {
  std::map<int64_t, std::vector<double>> pooled;
  for (size_t i = 0; i < step_rewards.size(); ++i) {
    auto& p = pooled[group[i]];
    p.insert(p.end(), step_rewards[i].begin(), step_rewards[i].end());
  }
  std::map<int64_t, Moments> moments;
  for (const auto& [g, xs] : pooled) moments[g] = ComputeMoments(xs);
  std::vector<std::vector<double>> out(step_rewards.size());
  for (size_t i = 0; i < step_rewards.size(); ++i) {
    const auto& r = step_rewards[i];
    const Moments& m = moments[group[i]];
    const bool single = pooled[group[i]].size() < 2;
    out[i].assign(r.size(), 0.0);
    double to_go = 0.0;
    for (size_t k = r.size(); k-- > 0;) {
      to_go += single ? 0.0 : Normalise(r[k], m, options);
      out[i][k] = to_go;
    }
  }
  return out;
}

bool ZeroVarianceGroup(const std::vector<double>& rewards, double tolerance) {
  for (double r : rewards) {
    if (std::abs(r - rewards.front()) > tolerance) return false;
  }
  return true;
}

bool FlatGroup(const std::vector<double>& rewards,
               const std::vector<std::vector<double>>& step_rewards, double tolerance) {
  if (!rewards.empty() && !ZeroVarianceGroup(rewards, tolerance)) return false;
  std::vector<double> pooled;
  for (const auto& r : step_rewards) pooled.insert(pooled.end(), r.begin(), r.end());
  return pooled.empty() || ZeroVarianceGroup(pooled, tolerance);
}

}  // namespace allot::trainer::grpo
