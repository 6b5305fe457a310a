// An external client drives a worker process: @grpc/grpc-js + @grpc/proto-loader loading our
// .proto (tests/js/rollout_client.js).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "tests/rollout/rollout_test_util.h"

namespace allot::rollout {
namespace {

bool HaveNode() { return std::system("node --version > /dev/null 2>&1") == 0; }

TEST(NodeClientIntegrationTest, GrpcJsClientRunsEpisodes) {
  if (!HaveNode()) GTEST_SKIP() << "node is not installed";
  const std::string js = std::string(ALLOT_SOURCE_DIR) + "/tests/js";
  std::ifstream probe(js + "/node_modules/@grpc/grpc-js/package.json");
  if (!probe) {
    const std::string install =
        "npm install --prefix '" + js + "' --no-audit --no-fund > /dev/null 2>&1";
    ASSERT_EQ(std::system(install.c_str()), 0) << "npm install failed in " << js;
  }
  auto w = testing::WorkerProcess::Start("auth: {token: \"node-token-42\"}");
  ASSERT_NE(w, nullptr);
  ASSERT_FALSE(w->address().empty());
  const std::string out = std::string(ALLOT_BINARY_DIR) + "/rollout_node_client.out";
  const std::string cmd = "node '" + js + "/rollout_client.js' " + w->address() + " '" +
                          std::string(ALLOT_SOURCE_DIR) + "/proto' node-token-42 > '" + out +
                          "' 2>&1";
  const int rc = std::system(cmd.c_str());
  std::ifstream in(out);
  std::stringstream ss;
  ss << in.rdbuf();
  ASSERT_EQ(rc, 0) << ss.str();
  EXPECT_NE(ss.str().find("\"ids\":[\"js-0\",\"js-1\",\"js-2\",\"js-3\",\"js-4\"]"),
            std::string::npos)
      << ss.str();
  EXPECT_NE(ss.str().find("format=1"), std::string::npos) << ss.str();
}

}  // namespace
}  // namespace allot::rollout
