#include "core/crash_guard.h"

#include <gtest/gtest.h>

#include <sstream>
#include <stdexcept>
#include <thread>

namespace allot {
namespace {

TEST(CrashGuardTest, PassesTheBodysExitCodeThrough) {
  std::ostringstream err;
  EXPECT_EQ(RunGuarded(
                "train", [] { return 3; }, err, 1),
            3);
  EXPECT_EQ(err.str(), "");
}

TEST(CrashGuardTest, EscapedExceptionIsOneLineNamingTheCommand) {
  std::ostringstream err;
  const int code = RunGuarded(
      "tokenize", []() -> int { throw std::runtime_error("type must be boolean"); }, err, 1);
  EXPECT_EQ(code, 1);
  EXPECT_EQ(err.str(), "allot tokenize: internal error: type must be boolean\n");

  std::ostringstream err2;
  EXPECT_EQ(RunGuarded(
                "serve", []() -> int { throw 42; }, err2, 7),
            7);
  EXPECT_EQ(err2.str(), "allot serve: internal error: an exception that is not a std::exception\n");
}

// An exception escaping a thread calls std::terminate: without the handler that is SIGABRT and
// a core dump.
TEST(CrashGuardDeathTest, ExceptionOnAThreadExitsWithOneLine) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        InstallTerminateHandler("rollout-worker", 1);
        std::thread([] { throw std::runtime_error("boom"); }).join();
      },
      testing::ExitedWithCode(1), "^allot rollout-worker: internal error: boom\n$");
}

}  // namespace
}  // namespace allot
