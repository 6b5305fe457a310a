// The --nproc launcher with /bin/sh as the rank program: variables, first failure, signals.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/models/tiny_model.h"
#include "trainer/comm/local_launcher.h"

namespace allot::trainer::comm {
namespace {

std::vector<std::string> Sh(const std::string& script) { return {"/bin/sh", "-c", script}; }

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(CommLauncherIntegrationTest, EveryRankGetsTheTorchrunVariables) {
  const std::string dir = models::testing::MakeTempDir("launcher_env");
  LaunchOptions options;
  options.nproc = 3;
  auto result =
      LaunchLocalRanks(Sh("echo \"$RANK $LOCAL_RANK $WORLD_SIZE $MASTER_ADDR $MASTER_PORT\" > " +
                          dir + "/rank$RANK"),
                       options);
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(result->exit_code, 0);
  EXPECT_EQ(result->failed_rank, -1);
  std::string port;
  for (int r = 0; r < 3; ++r) {
    std::istringstream line(Slurp(dir + "/rank" + std::to_string(r)));
    int rank = -1, local = -1, world = -1;
    std::string addr, p;
    line >> rank >> local >> world >> addr >> p;
    EXPECT_EQ(rank, r);
    EXPECT_EQ(local, r);
    EXPECT_EQ(world, 3);
    EXPECT_EQ(addr, "127.0.0.1");
    EXPECT_FALSE(p.empty());
    if (r == 0) port = p;
    EXPECT_EQ(p, port) << "ranks must share one store port";
  }
}

TEST(CommLauncherIntegrationTest, FirstFailingRankStopsTheOthersAndGivesItsStatus) {
  LaunchOptions options;
  options.nproc = 3;
  options.stop_grace_s = 5;
  const auto t0 = std::chrono::steady_clock::now();
  auto result =
      LaunchLocalRanks(Sh("if [ \"$RANK\" = 1 ]; then exit 3; fi; exec sleep 60"), options);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(result->exit_code, 3);
  EXPECT_EQ(result->failed_rank, 1);
  EXPECT_NE(result->message.find("rank 1 exited with status 3"), std::string::npos)
      << result->message;
  EXPECT_LT(seconds, 5.0) << "the other ranks were not stopped";
}

TEST(CommLauncherIntegrationTest, ARankKilledByASignalReports128PlusSignal) {
  LaunchOptions options;
  options.nproc = 2;
  auto result = LaunchLocalRanks(Sh("if [ \"$RANK\" = 0 ]; then kill -9 $$; fi; exit 0"), options);
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(result->exit_code, 128 + 9);
  EXPECT_EQ(result->failed_rank, 0);
}

TEST(CommLauncherIntegrationTest, MissingProgramFails) {
  LaunchOptions options;
  options.nproc = 2;
  auto result = LaunchLocalRanks({"/nonexistent/allot-rank"}, options);
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(result->exit_code, 127);
}

}  // namespace
}  // namespace allot::trainer::comm
