// The --nproc launcher with /bin/sh as the rank program: variables, first failure, signals.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

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

// The attempt counter of a test: one line appended per start of rank 0.
int Attempts(const std::string& file) {
  std::istringstream in(Slurp(file));
  std::string line;
  int n = 0;
  while (std::getline(in, line)) ++n;
  return n;
}

// Rank 1 fails its first two starts; with two restarts the launch ends well. Catches: no restart,
// a restart of only the failed rank (rank 0's count would stay 1), a result that forgets the
// restarts or their causes.
TEST(CommLauncherIntegrationTest, FailedLaunchIsStartedAgainUpToMaxRestarts) {
  const std::string dir = models::testing::MakeTempDir("launcher_restart");
  const std::string count = dir + "/attempts";
  LaunchOptions options;
  options.nproc = 2;
  options.max_restarts = 2;
  auto result = LaunchLocalRanks(
      Sh("if [ \"$RANK\" = 0 ]; then echo x >> " + count + "; exit 0; fi; sleep 0.2; " +
         "n=$(wc -l < " + count + "); if [ \"$n\" -lt 3 ]; then exit 3; fi; exit 0"),
      options);
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(result->exit_code, 0) << result->message;
  EXPECT_EQ(Attempts(count), 3);
  ASSERT_EQ(result->restarted.size(), 2u);
  for (const LaunchResult& r : result->restarted) {
    EXPECT_EQ(r.failed_rank, 1);
    EXPECT_EQ(r.exit_code, 3);
    EXPECT_NE(r.message.find("rank 1 exited with status 3"), std::string::npos) << r.message;
  }
}

// A rank that always fails: max_restarts + 1 starts, then the last failure is the launch's.
// Catches: restarting forever, or one restart too many or too few.
TEST(CommLauncherIntegrationTest, LaunchGivesUpAfterMaxRestarts) {
  const std::string dir = models::testing::MakeTempDir("launcher_give_up");
  const std::string count = dir + "/attempts";
  LaunchOptions options;
  options.nproc = 1;
  options.max_restarts = 2;
  auto result = LaunchLocalRanks(Sh("echo x >> " + count + "; kill -9 $$"), options);
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(result->exit_code, 128 + 9);
  EXPECT_EQ(Attempts(count), 3);
  EXPECT_EQ(result->restarted.size(), 2u);
}

// The restart policy gives the next command (allot adds --restarted) or refuses with a reason,
// which ends the launch with the failure and the reason. Catches: the old command run again, or
// a refusal that restarts anyway or hides why.
TEST(CommLauncherIntegrationTest, RestartPolicyChoosesTheCommandOrRefuses) {
  const std::string dir = models::testing::MakeTempDir("launcher_policy");
  const std::string count = dir + "/attempts";
  LaunchOptions options;
  options.nproc = 2;
  options.max_restarts = 3;
  // Each rank writes its line and fails only once both ranks of the start have written theirs
  // (at most 10 s): the launcher stops the other rank when one fails, which could otherwise
  // come before that rank's line.
  auto Start = [&](const std::string& what) {
    return "echo \"$RANK " + what + "\" >> " + count + "; i=0; while [ \"$(grep -c '" + what +
           "' " + count + ")\" -lt 2 ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done; exit 4";
  };
  std::vector<int> asked;
  options.restart = [&](const LaunchResult& failure,
                        int restart) -> Result<std::vector<std::string>> {
    asked.push_back(restart);
    EXPECT_EQ(failure.exit_code, 4);
    if (restart == 2) return NotFound("no verified checkpoint");
    return Sh(Start("restarted"));
  };
  auto result = LaunchLocalRanks(Sh(Start("first")), options);
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(result->exit_code, 4);
  EXPECT_EQ(asked, (std::vector<int>{1, 2}));
  EXPECT_EQ(result->restarted.size(), 1u);
  EXPECT_NE(result->message.find("not restarted: no verified checkpoint"), std::string::npos)
      << result->message;
  const std::string starts = Slurp(count);
  EXPECT_EQ(Attempts(count), 4) << starts;
  EXPECT_NE(starts.find("0 restarted"), std::string::npos) << starts;
  EXPECT_NE(starts.find("1 restarted"), std::string::npos) << starts;
}

// Ctrl-C or a scheduler's SIGTERM to the launcher stops the ranks for good. Catches: a launch
// asked to stop that starts its ranks again.
TEST(CommLauncherIntegrationTest, LauncherStoppedBySignalDoesNotRestart) {
  const std::string dir = models::testing::MakeTempDir("launcher_stop");
  const std::string count = dir + "/attempts";
  LaunchOptions options;
  options.nproc = 2;
  options.max_restarts = 3;
  std::thread stopper([&] {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (Attempts(count) < 2 && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    kill(getpid(), SIGTERM);  // the launcher's handler forwards it to the ranks
  });
  auto result = LaunchLocalRanks(Sh("echo x >> " + count + "; exec sleep 30"), options);
  stopper.join();
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(result->exit_code, 128 + SIGTERM);
  EXPECT_TRUE(result->restarted.empty());
  EXPECT_EQ(Attempts(count), 2);
}

}  // namespace
}  // namespace allot::trainer::comm
