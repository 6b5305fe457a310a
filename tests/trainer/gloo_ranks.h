// Learner ranks on threads for tests: `world` threads, each with its own Communicator on
// LibTorch's ProcessGroupGloo, meeting on one TCPStore over loopback (the code path of separate
// processes; comm_launcher_test.cc covers processes).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "trainer/comm/communicator.h"
#include "trainer/comm/local_launcher.h"

namespace allot::trainer::testing {

inline void RunGlooRanks(int world, const std::function<void(int, comm::Communicator&)>& body,
                         double timeout_s = 120) {
  auto port = comm::FreeTcpPort("127.0.0.1");
  ASSERT_TRUE(port.ok()) << port.status().message();
  comm::CommOptions options;
  options.backend = "gloo";
  options.bucket_bytes = 4096;  // several buckets per all-reduce
  options.timeout_s = timeout_s;
  std::vector<std::thread> threads;
  std::vector<std::string> errors(world);
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      comm::DistEnv env;
      env.rank = r;
      env.local_rank = r;
      env.world_size = world;
      env.master_addr = "127.0.0.1";
      env.master_port = *port;
      auto c = comm::Communicator::Create(env, options);
      if (!c.ok()) {
        errors[r] = c.status().message();
        return;
      }
      body(r, **c);
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < world; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

}  // namespace allot::trainer::testing
