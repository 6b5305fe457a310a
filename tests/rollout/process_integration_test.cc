// A learner plus worker processes on loopback, with faults: kill -9, a hung worker, a
// restarted dispatcher, dropped streams, SIGTERM. In every case the finished episode ids equal
// the requested ids exactly.
#include <gtest/gtest.h>
#include <signal.h>

#include <set>
#include <thread>

#include "rollout/dispatcher.h"
#include "tests/rollout/rollout_test_util.h"

namespace allot::rollout {
namespace {

using namespace std::chrono_literals;
using testing::Collect;
using testing::EchoRequests;
using testing::TcpProxy;
using testing::WorkerProcess;

std::set<std::string> Ids(const std::vector<v1::EpisodeRequest>& reqs) {
  std::set<std::string> ids;
  for (const auto& r : reqs) ids.insert(r.episode_id());
  return ids;
}

// Adds the delivered ids to `seen`; fails on any id delivered twice.
void Absorb(const std::vector<FinishedEpisode>& done, std::set<std::string>& seen) {
  for (const auto& f : done) {
    EXPECT_TRUE(seen.insert(f.trajectory.episode_id()).second)
        << "duplicate " << f.trajectory.episode_id();
    EXPECT_EQ(f.trajectory.failure().reason(), v1::FAILURE_REASON_NONE)
        << f.trajectory.failure().message();
  }
}

class RolloutProcessIntegrationTest : public ::testing::Test {
 protected:
  void StartWorkers(int n, const std::string& yaml = "capacity: 8, threads: 8") {
    for (int i = 0; i < n; ++i) {
      workers_.push_back(WorkerProcess::Start(yaml));
      ASSERT_NE(workers_.back(), nullptr);
      ASSERT_FALSE(workers_.back()->address().empty()) << "worker did not start";
    }
  }
  DispatcherConfig Config() {
    DispatcherConfig dc;
    for (const auto& w : workers_) dc.workers.push_back(w->address());
    dc.heartbeat_interval_ms = 200;
    dc.missed_heartbeats = 3;
    dc.reconnect_initial_ms = 50;
    dc.reconnect_max_ms = 500;
    return dc;
  }
  std::vector<std::unique_ptr<WorkerProcess>> workers_;
};

TEST_F(RolloutProcessIntegrationTest, KillDashNineMidStreamLosesNothing) {
  StartWorkers(3);
  auto d = Dispatcher::Create(Config());
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE((*d)->WaitForWorkers(3, 10s));
  auto reqs = EchoRequests("k", 600, "{delay_ms: 10}");
  ASSERT_TRUE((*d)->Submit(reqs).ok());
  std::set<std::string> seen;
  Absorb(Collect(**d, 150, 30s), seen);
  workers_[0]->Signal(SIGKILL);
  Absorb(Collect(**d, reqs.size() - seen.size(), 60s), seen);
  EXPECT_EQ(seen, Ids(reqs));
  EXPECT_GE((*d)->stats().worker_losses, 1);
  EXPECT_FALSE((*d)->Next(100ms).has_value());
}

TEST_F(RolloutProcessIntegrationTest, HungWorkerMissesHeartbeatsAndIsReplaced) {
  StartWorkers(3);
  auto d = Dispatcher::Create(Config());
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE((*d)->WaitForWorkers(3, 10s));
  auto reqs = EchoRequests("h", 300, "{delay_ms: 10}");
  ASSERT_TRUE((*d)->Submit(reqs).ok());
  std::set<std::string> seen;
  Absorb(Collect(**d, 60, 30s), seen);
  workers_[1]->Signal(SIGSTOP);  // alive socket, no answers
  Absorb(Collect(**d, reqs.size() - seen.size(), 60s), seen);
  workers_[1]->Signal(SIGCONT);
  EXPECT_EQ(seen, Ids(reqs));
  EXPECT_GE((*d)->stats().worker_losses, 1);
  // The resumed worker may resend what it finished; those are dropped as duplicates.
  std::this_thread::sleep_for(500ms);
  EXPECT_FALSE((*d)->Next(100ms).has_value());
}

TEST_F(RolloutProcessIntegrationTest, RestartedDispatcherPicksUpWhereTheOldOneStopped) {
  StartWorkers(3);
  auto reqs = EchoRequests("r", 400, "{delay_ms: 10}");
  std::set<std::string> seen;
  {
    auto d1 = Dispatcher::Create(Config());
    ASSERT_TRUE(d1.ok());
    ASSERT_TRUE((*d1)->WaitForWorkers(3, 10s));
    ASSERT_TRUE((*d1)->Submit(reqs).ok());
    Absorb(Collect(**d1, 100, 30s), seen);
    (*d1)->Shutdown();
    // What the old learner already accepted is still handed out (the trainer would have
    // checkpointed it); nothing more arrives after shutdown.
    while (auto f = (*d1)->Next(10ms)) Absorb({*f}, seen);
  }
  ASSERT_LT(seen.size(), reqs.size());
  std::vector<v1::EpisodeRequest> rest;
  for (const auto& r : reqs) {
    if (seen.count(r.episode_id()) == 0) rest.push_back(r);
  }
  auto d2 = Dispatcher::Create(Config());
  ASSERT_TRUE(d2.ok());
  ASSERT_TRUE((*d2)->Submit(rest).ok());
  Absorb(Collect(**d2, rest.size(), 60s), seen);
  EXPECT_EQ(seen, Ids(reqs));
  EXPECT_FALSE((*d2)->Next(200ms).has_value());
}

TEST_F(RolloutProcessIntegrationTest, DroppedStreamsAreResumed) {
  StartWorkers(3);
  std::vector<std::unique_ptr<TcpProxy>> proxies;
  DispatcherConfig dc = Config();
  dc.workers.clear();
  for (const auto& w : workers_) {
    proxies.push_back(std::make_unique<TcpProxy>(w->address()));
    dc.workers.push_back("127.0.0.1:" + std::to_string(proxies.back()->port()));
  }
  auto d = Dispatcher::Create(dc);
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE((*d)->WaitForWorkers(3, 10s));
  auto reqs = EchoRequests("d", 500, "{delay_ms: 10}");
  ASSERT_TRUE((*d)->Submit(reqs).ok());
  std::set<std::string> seen;
  Absorb(Collect(**d, 100, 30s), seen);
  for (auto& p : proxies) p->DropAll();
  Absorb(Collect(**d, 150, 30s), seen);
  proxies[2]->DropAll();
  Absorb(Collect(**d, reqs.size() - seen.size(), 60s), seen);
  EXPECT_EQ(seen, Ids(reqs));
  EXPECT_GE((*d)->stats().worker_losses, 3);
  EXPECT_FALSE((*d)->Next(200ms).has_value());
}

TEST_F(RolloutProcessIntegrationTest, SigtermDrainsInFlightEpisodes) {
  StartWorkers(1, "capacity: 4, threads: 4, drain_timeout_s: 20");
  auto d = Dispatcher::Create(Config());
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE((*d)->WaitForWorkers(1, 10s));
  auto reqs = EchoRequests("t", 4, "{delay_ms: 600}");
  ASSERT_TRUE((*d)->Submit(reqs).ok());
  for (int i = 0; i < 200 && (*d)->stats().in_flight < 4; ++i) std::this_thread::sleep_for(5ms);
  std::this_thread::sleep_for(100ms);
  workers_[0]->Signal(SIGTERM);
  std::set<std::string> seen;
  Absorb(Collect(**d, 4, 20s), seen);
  EXPECT_EQ(seen, Ids(reqs));
  EXPECT_EQ((*d)->stats().redispatched, 0);  // finished where they ran
  EXPECT_EQ(workers_[0]->Wait(10s), 0);
}

TEST_F(RolloutProcessIntegrationTest, NonLoopbackBindWithoutAuthRefusesToStart) {
  auto w = WorkerProcess::Start("listen: \"0.0.0.0:0\"");
  ASSERT_NE(w, nullptr);
  EXPECT_TRUE(w->address().empty());
  // A token alone would cross the network in plaintext: refused unless explicitly allowed.
  auto plain =
      WorkerProcess::Start("listen: \"0.0.0.0:0\", auth: {token: \"a-long-shared-secret\"}");
  ASSERT_NE(plain, nullptr);
  EXPECT_TRUE(plain->address().empty());
  auto ok = WorkerProcess::Start(
      "listen: \"0.0.0.0:0\", auth: {token: \"a-long-shared-secret\", allow_insecure_transport: "
      "true}");
  ASSERT_NE(ok, nullptr);
  EXPECT_FALSE(ok->address().empty());
}

}  // namespace
}  // namespace allot::rollout
