// The Python sandbox really contains what it promises to contain. These start real bubblewrap
// processes, hence the integration label.
#include "tools/sandbox.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>

#include "tools/rstkit.h"

namespace allot::tools {
namespace {

SandboxConfig FastConfig() {
  SandboxConfig c;
  c.wall_timeout_s = 5;
  c.cpu_limit_s = 3;
  c.memory_limit_mb = 256;
  return c;
}

class SandboxIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Status s = sandbox_.SelfTest();
    ASSERT_TRUE(s.ok()) << "bubblewrap sandbox unusable here: " << s.ToString();
  }
  ExecResult Run(const std::string& code) {
    auto r = sandbox_.RunPython(code);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : ExecResult{};
  }
  Sandbox sandbox_{FastConfig()};
};

TEST_F(SandboxIntegrationTest, CapturesStdoutStderrAndExitCode) {
  ExecResult r = Run("import sys\nprint('out')\nprint('err', file=sys.stderr)\nsys.exit(3)");
  EXPECT_EQ(r.stdout_text, "out\n");
  EXPECT_EQ(r.stderr_text, "err\n");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_FALSE(r.timed_out);
  r = Run("raise ValueError('bad')");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.stderr_text.find("ValueError: bad"), std::string::npos);
}

TEST_F(SandboxIntegrationTest, NoNetwork) {
  ExecResult r =
      Run("import socket\n"
          "try:\n"
          "  socket.create_connection(('127.0.0.1', 22), timeout=2)\n"
          "  print('connected')\n"
          "except OSError as e:\n"
          "  print('blocked', e.errno)\n"
          "import os\nprint(sorted(os.listdir('/sys/class/net')) if "
          "os.path.exists('/sys/class/net') else 'nosys')");
  EXPECT_EQ(r.stdout_text.rfind("blocked", 0), 0u) << r.stdout_text << r.stderr_text;
  EXPECT_EQ(r.stdout_text.find("connected"), std::string::npos);
}

TEST_F(SandboxIntegrationTest, WritesOnlyToPrivateTmp) {
  // A file the host can see: the sandbox must not be able to create or change it.
  const std::string host_dir = std::string(ALLOT_BINARY_DIR);
  const std::string probe = host_dir + "/sandbox_probe_" + std::to_string(::getpid());
  ExecResult r =
      Run("import os\n"
          "for p in ['/etc/allot_probe', '/usr/allot_probe', '/allot_probe', '" +
          probe +
          "']:\n"
          "  try:\n"
          "    open(p, 'w').write('x'); print('WROTE', p)\n"
          "  except OSError as e:\n"
          "    print('denied', p)\n"
          "open('/tmp/ok.txt', 'w').write('fine')\n"
          "print(open('/tmp/ok.txt').read())\n");
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_EQ(r.stdout_text.find("WROTE"), std::string::npos) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("fine"), std::string::npos);
  struct stat st;
  EXPECT_NE(::stat(probe.c_str(), &st), 0);
  EXPECT_NE(::stat("/etc/allot_probe", &st), 0);
  // /tmp is private: nothing written there shows up on the host.
  r = Run("open('/tmp/leak_check_allot', 'w').write('1')");
  EXPECT_NE(::stat("/tmp/leak_check_allot", &st), 0);
}

TEST_F(SandboxIntegrationTest, InfiniteLoopIsKilled) {
  const auto start = std::chrono::steady_clock::now();
  ExecResult r = Run("while True:\n  pass\n");
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(r.timed_out || r.term_signal != 0) << r.exit_code;
  EXPECT_LT(s, 8.0);
}

TEST_F(SandboxIntegrationTest, SleepingPastTheWallClockIsKilled) {
  SandboxConfig c = FastConfig();
  c.wall_timeout_s = 1;
  Sandbox short_box(c);
  const auto start = std::chrono::steady_clock::now();
  auto r = short_box.RunPython(
      "import os, time\n"
      "if os.fork() == 0:\n"
      "  os.setsid()\n"
      "  time.sleep(60)\n"
      "time.sleep(60)\n");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->timed_out);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(s, 4.0);
}

TEST_F(SandboxIntegrationTest, MemoryHogIsContained) {
  ExecResult r =
      Run("try:\n"
          "  x = bytearray(2 * 1024 * 1024 * 1024)\n"
          "  print('allocated')\n"
          "except MemoryError:\n"
          "  print('MemoryError')\n");
  EXPECT_EQ(r.stdout_text, "MemoryError\n") << r.stderr_text;
}

TEST_F(SandboxIntegrationTest, ForkBombIsContained) {
  // Each process forks as fast as it can; the process limit stops the growth and the wall
  // clock ends the rest. The host must survive and the run must end on time.
  const auto start = std::chrono::steady_clock::now();
  ExecResult r =
      Run("import os\n"
          "n = 0\n"
          "while True:\n"
          "  try:\n"
          "    os.fork(); n += 1\n"
          "  except OSError:\n"
          "    break\n"
          "print('fork failed after', n, flush=True)\n"
          "import time; time.sleep(30)\n");
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(r.timed_out);
  EXPECT_NE(r.stdout_text.find("fork failed"), std::string::npos) << r.stderr_text;
  EXPECT_LT(s, 9.0);
  // The next run works: nothing of the bomb is left behind holding the process budget.
  EXPECT_EQ(Run("print('alive')").stdout_text, "alive\n");
}

TEST_F(SandboxIntegrationTest, OutputIsCapped) {
  SandboxConfig c = FastConfig();
  c.max_output_bytes = 1000;
  Sandbox small(c);
  auto r = small.RunPython("print('y' * 100000)");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->stdout_text.size(), 1000u);
  EXPECT_TRUE(r->stdout_truncated);
  EXPECT_EQ(r->exit_code, 0);
}

TEST_F(SandboxIntegrationTest, LargeFileWritesAreCapped) {
  ExecResult r =
      Run("try:\n"
          "  open('/tmp/big', 'wb').write(b'0' * (64 * 1024 * 1024))\n"
          "  print('wrote')\n"
          "except OSError as e:\n"
          "  print('refused')\n");
  EXPECT_EQ(r.stdout_text, "refused\n") << r.stderr_text;
}

TEST_F(SandboxIntegrationTest, CodeToolReportsStatus) {
  ToolRegistry registry;
  ASSERT_TRUE(RegisterCodeTool(registry, std::make_shared<const Sandbox>(FastConfig())).ok());
  ToolResult ok = registry.Call({"execute_python", {{"code", "print(sum(range(101)))"}}});
  ASSERT_TRUE(ok.ok) << ok.Render();
  EXPECT_EQ(ok.output["stdout"], "5050\n");
  ToolResult bad = registry.Call({"execute_python", {{"code", "1/0"}}});
  EXPECT_FALSE(bad.ok);
  EXPECT_EQ(bad.ToJson()["status"], "error");
  EXPECT_NE(bad.output["stderr"].get<std::string>().find("ZeroDivisionError"), std::string::npos);
}

TEST(SandboxTest, RefusesOversizedOrBinaryCode) {
  Sandbox s(FastConfig());
  EXPECT_EQ(s.RunPython(std::string(70000, 'x')).status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(s.RunPython(std::string("print(1)\0", 9)).status().code(),
            StatusCode::kInvalidArgument);
  SandboxConfig missing = FastConfig();
  missing.bwrap = "no-such-bwrap-binary";
  EXPECT_EQ(Sandbox(missing).RunPython("print(1)").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace allot::tools
