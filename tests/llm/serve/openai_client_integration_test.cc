// The official OpenAI npm client (tests/js/openai_client.mjs) against the real `allot serve`
// process on loopback: completions, chat, n > 1, logprobs, streaming, malformed requests, and a
// clean exit on SIGTERM.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "tests/llm/serve/serve_fixture.h"

namespace allot::llm::serve {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool Exists(const std::string& path) { return std::ifstream(path).good(); }

// `allot serve` as a child process; its output goes to `log`.
class ServeProcess {
 public:
  ServeProcess(const std::vector<std::string>& args, std::string log) : log_(std::move(log)) {
    // Emptied before the fork: a previous run's URL must not be mistaken for this one's.
    std::ofstream(log_, std::ios::trunc).close();
    pid_ = fork();
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the test
      FILE* f = std::freopen(log_.c_str(), "w", stdout);
      (void)f;
      dup2(fileno(stdout), fileno(stderr));
      std::vector<char*> argv;
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
  }
  ~ServeProcess() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

  // The URL the server printed once ready, or "" when it exited or timed out.
  std::string WaitForUrl(std::chrono::seconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    const std::regex url("listening on (http://[0-9.]+:[0-9]+)");
    while (std::chrono::steady_clock::now() < until) {
      std::smatch m;
      const std::string out = ReadFile(log_);
      if (std::regex_search(out, m, url)) return m[1];
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        return "";
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return "";
  }

  // Sends `sig` and returns the exit code (-1 killed by a signal, -2 timed out).
  int Stop(int sig, std::chrono::seconds timeout) {
    kill(pid_, sig);
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < until) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -2;
  }

 private:
  std::string log_;
  pid_t pid_ = -1;
  bool exited_ = false;
};

TEST(OpenAiClientIntegrationTest, OfficialClientAgainstAllotServe) {
  if (std::system("node --version > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "node is not installed";
  }
  const std::string js = std::string(ALLOT_SOURCE_DIR) + "/tests/js";
  if (!Exists(js + "/node_modules/openai/package.json")) {
    GTEST_SKIP() << "tests/js/node_modules/openai is missing (run npm install in tests/js)";
  }
  const std::string allot = std::string(ALLOT_BINARY_DIR) + "/apps/allot";
  if (!Exists(allot)) GTEST_SKIP() << allot << " is not built (ninja allot)";

  const std::string model = testing::WriteServableTinyModel("serve_openai_js");
  const std::string log = std::string(ALLOT_BINARY_DIR) + "/serve_openai_js.log";
  ServeProcess server({allot, "serve", "--model", model, "--port", "0", "--served-model-name",
                       "tiny-js", "--max-batch", "8"},
                      log);
  const std::string url = server.WaitForUrl(std::chrono::seconds(60));
  ASSERT_FALSE(url.empty()) << ReadFile(log);

  const std::string out = std::string(ALLOT_BINARY_DIR) + "/serve_openai_js.out";
  const std::string cmd =
      "node '" + js + "/openai_client.mjs' " + url + " tiny-js > '" + out + "' 2>&1";
  const int rc = std::system(cmd.c_str());
  const std::string report = ReadFile(out);
  EXPECT_EQ(rc, 0) << report;
  EXPECT_NE(report.find("all checks passed"), std::string::npos) << report;
  EXPECT_EQ(report.find("FAIL"), std::string::npos) << report;

  EXPECT_EQ(server.Stop(SIGTERM, std::chrono::seconds(30)), 0) << ReadFile(log);
}

TEST(ServeCommandIntegrationTest, UnloadableAdapterFailsWithAMessage) {
  const std::string allot = std::string(ALLOT_BINARY_DIR) + "/apps/allot";
  if (!Exists(allot)) GTEST_SKIP() << allot << " is not built (ninja allot)";
  const std::string dir = testing::WriteServableTinyModel("serve_bad_adapter");
  const std::string log = std::string(ALLOT_BINARY_DIR) + "/serve_bad_adapter.log";
  ServeProcess server({allot, "serve", "--model", dir, "--port", "0", "--adapter", "x=/no/such"},
                      log);
  EXPECT_EQ(server.WaitForUrl(std::chrono::seconds(60)), "");
  EXPECT_NE(ReadFile(log).find("/no/such"), std::string::npos) << ReadFile(log);
}

}  // namespace
}  // namespace allot::llm::serve
