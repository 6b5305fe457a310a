// What a GRPO step reports of its episodes: the share of each value of the env's step_shares
// info keys (CogER's routed level per step).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "trainer/grpo/grpo_metrics.h"

namespace allot::trainer::grpo {
namespace {

v1::Trajectory Episode(const std::map<std::string, std::string>& info) {
  v1::Trajectory t;
  t.set_reward(1.0);
  for (const auto& [k, v] : info) (*t.mutable_info())[k] = v;
  return t;
}

std::map<std::string, double> ByName(const Scalars& scalars) {
  std::map<std::string, double> out;
  for (const auto& [name, value] : scalars) out[name] = value;
  return out;
}

TEST(GrpoMetricsTest, StepSharesCountEachValueAndEpisodesWithoutTheKeyAsNone) {
  StepMetrics m;
  const std::vector<std::string> keys = {"level"};
  m.ObserveEpisode(Episode({{"level", "L2"}, {"answered_by", "t1"}}), keys);
  m.ObserveEpisode(Episode({{"level", "L2"}}), keys);
  m.ObserveEpisode(Episode({{"level", "L4"}}), keys);
  m.ObserveEpisode(Episode({}), keys);  // no level: a router output without a tag
  const auto s = ByName(m.ToScalars());
  EXPECT_DOUBLE_EQ(s.at("share/level/L2"), 0.5);
  EXPECT_DOUBLE_EQ(s.at("share/level/L4"), 0.25);
  EXPECT_DOUBLE_EQ(s.at("share/level/none"), 0.25);
  EXPECT_EQ(s.count("share/answered_by/t1"), 0u);  // not a step_shares key
}

TEST(GrpoMetricsTest, NoStepSharesNoShareMetrics) {
  StepMetrics m;
  m.ObserveEpisode(Episode({{"level", "L2"}}), {});
  for (const auto& [name, value] : m.ToScalars()) {
    EXPECT_NE(name.rfind("share/", 0), 0u) << name;
  }
}

}  // namespace
}  // namespace allot::trainer::grpo
