// The run plots: their gnuplot scripts label the axes, the PNGs render at the size the script
// asks for, and the smoothing and hull they draw are right.
#include "core/run_plots.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/core/temp_dir.h"

namespace allot {
namespace {

using testing::TempDir;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Width and height from the PNG's IHDR chunk (bytes 16..23, big-endian); {0, 0} when the file
// is no PNG.
std::pair<int, int> PngSize(const std::string& path) {
  const std::string b = ReadAll(path);
  if (b.size() < 24 || b.compare(1, 3, "PNG") != 0) return {0, 0};
  auto be32 = [&](size_t at) {
    return (static_cast<unsigned char>(b[at]) << 24) |
           (static_cast<unsigned char>(b[at + 1]) << 16) |
           (static_cast<unsigned char>(b[at + 2]) << 8) | static_cast<unsigned char>(b[at + 3]);
  };
  return {be32(16), be32(20)};
}

bool HasGnuplot() { return std::system("command -v gnuplot > /dev/null 2>&1") == 0; }

void WriteMetrics(const std::string& path, int steps) {
  std::ofstream out(path);
  out << R"({"step":0,"time":1.0,"lr":0.001})"
      << "\n";  // no reward: not a curve point
  for (int s = 1; s <= steps; ++s) {
    out << nlohmann::json{{"step", s},
                          {"reward/mean", 0.1 * s},
                          {"accuracy", 0.02 * s},
                          {"cost_usd_per_episode", 1e-5 * (s % 3 + 1)}}
               .dump()
        << "\n";
  }
}

nlohmann::json TableRows() {
  auto row = [](std::string label, std::string method, std::string phase, double cost, double acc) {
    return nlohmann::json{{"label", label},        {"method", method}, {"phase", phase},
                          {"mean_cost_usd", cost}, {"accuracy", acc},  {"episodes", 96}};
  };
  return nlohmann::json::array({row("fixed L1", "L1", "before", 5.8e-6, 0.05),
                                row("fixed L2", "L2", "before", 3.1e-5, 0.14),
                                row("fixed L4", "L4", "before", 1.6e-4, 0.26),
                                row("random (expected)", "random", "before", 6.7e-5, 0.14),
                                row("router (trained)", "router", "after", 6.5e-5, 0.27)});
}

TEST(RunPlotsTest, TrainingCurvesScriptLabelsEveryAxisAndRendersItsSize) {
  TempDir dir;
  WriteMetrics(dir.path() + "/metrics.jsonl", 30);
  auto f = PlotTrainingCurves(dir.path() + "/metrics.jsonl", dir.path());
  ASSERT_TRUE(f.ok()) << f.status().message();
  const std::string gp = ReadAll(f->script);
  EXPECT_NE(gp.find("set xlabel 'training step'"), std::string::npos) << gp;
  EXPECT_NE(gp.find("set ylabel 'reward (mean per episode)'"), std::string::npos) << gp;
  EXPECT_NE(gp.find("set ylabel 'cost per episode (USD)'"), std::string::npos) << gp;
  EXPECT_NE(gp.find("moving average"), std::string::npos) << gp;
  // 30 curve rows and a header; the step-0 record without reward is left out.
  const std::string dat = ReadAll(f->data);
  EXPECT_EQ(std::count(dat.begin(), dat.end(), '\n'), 31) << dat;
  if (!HasGnuplot()) GTEST_SKIP() << "gnuplot not installed: the PNG is not rendered";
  ASSERT_TRUE(f->rendered) << "gnuplot failed on " << f->script;
  EXPECT_EQ(PngSize(f->png), std::make_pair(1000, 60 + 300 * 3));
}

TEST(RunPlotsTest, TrainingCurvesLeaveOutAMetricNoRecordHolds) {
  TempDir dir;
  std::ofstream(dir.path() + "/metrics.jsonl") << R"({"step":1,"reward/mean":0.5})"
                                               << "\n"
                                               << R"({"step":2,"reward/mean":0.7})"
                                               << "\n";
  auto f = PlotTrainingCurves(dir.path() + "/metrics.jsonl", dir.path());
  ASSERT_TRUE(f.ok()) << f.status().message();
  const std::string gp = ReadAll(f->script);
  EXPECT_NE(gp.find("layout 1,1"), std::string::npos) << gp;
  EXPECT_EQ(gp.find("USD"), std::string::npos) << gp;
}

TEST(RunPlotsTest, TrainingCurvesRefuseAFileWithoutRewards) {
  TempDir dir;
  std::ofstream(dir.path() + "/metrics.jsonl") << R"({"step":1,"lr":0.1})"
                                               << "\n";
  auto f = PlotTrainingCurves(dir.path() + "/metrics.jsonl", dir.path());
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kNotFound);
  EXPECT_NE(f.status().message().find("metrics.jsonl"), std::string::npos);
}

// The shares of the last value stack to 1 at every step; a value a step did not report counts 0
// there (not the previous step's share), "none" stacks last, and records without shares are no
// rows.
TEST(RunPlotsTest, SharesStackToOneAndAValueAStepLacksCountsZero) {
  TempDir dir;
  std::ofstream(dir.path() + "/metrics.jsonl")
      << R"({"step":1,"reward/mean":1,"share/level/none":0.25,"share/level/L4":0.25,)"
      << R"("share/level/L2":0.5})" << "\n"
      << R"({"step":2,"reward/mean":1,"share/level/L2":1.0})" << "\n"
      << R"({"step":3,"reward/mean":1})" << "\n";
  auto f = PlotShares(dir.path() + "/metrics.jsonl", dir.path());
  ASSERT_TRUE(f.ok()) << f.status().message();
  std::ifstream dat(f->data);
  std::string header;
  std::getline(dat, header);
  EXPECT_NE(header.find("level=L2(from) level=L2(to) level=L4(from) level=L4(to) "
                        "level=none(from) level=none(to)"),
            std::string::npos)
      << header;
  // step, then (from, to) per band: L2, L4, none. EMA span 2 (alpha 2/3): step 2's L2 is
  // 2/3 * 1 + 1/3 * 0.5, its L4 and none 1/3 * 0.25 each.
  std::vector<std::vector<double>> rows;
  for (std::string line; std::getline(dat, line);) {
    std::istringstream in(line);
    std::vector<double> row;
    for (double v; in >> v;) row.push_back(v);
    rows.push_back(row);
  }
  ASSERT_EQ(rows.size(), 2u);
  for (const auto& row : rows) {
    ASSERT_EQ(row.size(), 7u);
    EXPECT_NEAR(row[6], 1.0, 1e-9);  // the top of the stack
    EXPECT_NEAR(row[3], row[2], 1e-12);  // bands touch
  }
  EXPECT_NEAR(rows[0][2], 0.5, 1e-9);
  EXPECT_NEAR(rows[1][2], 2.0 / 3 + 0.5 / 3, 1e-9);
  EXPECT_NEAR(rows[1][4] - rows[1][3], 0.25 / 3, 1e-9);
  const std::string gp = ReadAll(f->script);
  EXPECT_NE(gp.find("set ylabel 'share of episodes (%)'"), std::string::npos) << gp;
  EXPECT_NE(gp.find("set xlabel 'training step'"), std::string::npos) << gp;
  if (!HasGnuplot()) GTEST_SKIP() << "gnuplot not installed: the PNG is not rendered";
  ASSERT_TRUE(f->rendered) << "gnuplot failed on " << f->script;
  EXPECT_EQ(PngSize(f->png), std::make_pair(1000, 80 + 300));
}

TEST(RunPlotsTest, SharesRefuseAFileWithoutShares) {
  TempDir dir;
  WriteMetrics(dir.path() + "/metrics.jsonl", 5);
  auto f = PlotShares(dir.path() + "/metrics.jsonl", dir.path());
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kNotFound);
}

TEST(RunPlotsTest, CostAccuracyScriptLabelsAxesUsesLogCostAndRendersItsSize) {
  TempDir dir;
  auto f = PlotCostAccuracy(TableRows(), dir.path());
  ASSERT_TRUE(f.ok()) << f.status().message();
  const std::string gp = ReadAll(f->script);
  EXPECT_NE(gp.find("set xlabel 'mean cost per query (USD, log scale)'"), std::string::npos) << gp;
  EXPECT_NE(gp.find("set ylabel 'accuracy (fraction of test items correct)'"), std::string::npos)
      << gp;
  EXPECT_NE(gp.find("set logscale x"), std::string::npos) << gp;  // costs span 28x
  EXPECT_NE(gp.find("title 'router (trained)'"), std::string::npos) << gp;
  EXPECT_NE(gp.find("title 'hull of fixed levels + random'"), std::string::npos) << gp;
  if (!HasGnuplot()) GTEST_SKIP() << "gnuplot not installed: the PNG is not rendered";
  ASSERT_TRUE(f->rendered) << "gnuplot failed on " << f->script;
  EXPECT_EQ(PngSize(f->png), std::make_pair(1100, 620));
}

TEST(RunPlotsTest, CostAccuracyKeepsALinearAxisForCloseCosts) {
  TempDir dir;
  nlohmann::json rows = TableRows();
  rows.erase(rows.begin());  // without L1 the costs span 5x
  auto f = PlotCostAccuracy(rows, dir.path());
  ASSERT_TRUE(f.ok()) << f.status().message();
  const std::string gp = ReadAll(f->script);
  EXPECT_EQ(gp.find("logscale"), std::string::npos) << gp;
  EXPECT_NE(gp.find("set xlabel 'mean cost per query (USD)'"), std::string::npos) << gp;
}

TEST(RunPlotsTest, CostAccuracyRefusesRowsWithoutCost) {
  TempDir dir;
  auto f =
      PlotCostAccuracy(nlohmann::json::array({{{"label", "x"}, {"accuracy", 0.5}}}), dir.path());
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kInvalidArgument);
}

TEST(RunPlotsTest, MovingAverageStartsAtTheFirstValueAndSkipsGaps) {
  const double nan = std::nan("");
  const auto e = ExponentialMovingAverage({2.0, nan, 4.0, 4.0}, 0.5);
  ASSERT_EQ(e.size(), 4u);
  EXPECT_DOUBLE_EQ(e[0], 2.0);
  EXPECT_TRUE(std::isnan(e[1]));
  EXPECT_DOUBLE_EQ(e[2], 3.0);
  EXPECT_DOUBLE_EQ(e[3], 3.5);
}

TEST(RunPlotsTest, UpperHullDropsDominatedPointsAndStopsAtTheMostAccurate) {
  // (2, 0.1) lies under the segment (1, 0.1)-(3, 0.5); (4, 0.4) costs more for less.
  const auto h = UpperHull({{3, 0.5}, {1, 0.1}, {2, 0.1}, {4, 0.4}});
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[0], std::make_pair(1.0, 0.1));
  EXPECT_EQ(h[1], std::make_pair(3.0, 0.5));
}

}  // namespace
}  // namespace allot
