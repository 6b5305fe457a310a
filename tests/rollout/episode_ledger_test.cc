#include "rollout/episode_ledger.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace allot::rollout {
namespace {

v1::EpisodeRequest Request(const std::string& id, const std::string& group = "", uint32_t index = 0,
                           uint32_t size = 0) {
  v1::EpisodeRequest r;
  r.set_episode_id(id);
  r.set_env("echo");
  if (!group.empty()) {
    r.set_group_id(group);
    r.set_group_index(index);
    r.set_group_size(size);
  }
  return r;
}

v1::Trajectory Result(const v1::EpisodeRequest& r, double reward = 1.0) {
  v1::Trajectory t;
  t.set_episode_id(r.episode_id());
  t.set_group_id(r.group_id());
  t.set_group_index(r.group_index());
  t.set_policy_version(r.policy_version());
  t.set_reward(reward);
  return t;
}

Status SubmitAll(EpisodeLedger& ledger, std::vector<v1::EpisodeRequest> requests) {
  return ledger.Submit(std::move(requests));
}

// Catches: an episode dispatched without its attempt number or the policy version it is sampled
// under, or a trajectory that does not close its episode.
TEST(EpisodeLedgerTest, AcceptsAndClosesAnEpisode) {
  EpisodeLedger ledger(LedgerOptions{});
  ASSERT_TRUE(SubmitAll(ledger, {Request("a")}).ok());
  EXPECT_TRUE(ledger.has_pending());
  auto r = ledger.Dispatch(/*worker=*/0, /*policy_version=*/3);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->attempt(), 1u);
  EXPECT_EQ(r->policy_version(), 3u);
  EXPECT_FALSE(ledger.has_pending());
  EXPECT_EQ(ledger.in_flight_on(0), 1);
  EXPECT_EQ(ledger.Accept(Result(*r, 0.5), 3, "w0"), EpisodeLedger::Accepted::kClosed);
  EXPECT_EQ(ledger.in_flight_on(0), 0);
  auto f = ledger.PopReady();
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->trajectory.episode_id(), "a");
  EXPECT_DOUBLE_EQ(f->trajectory.reward(), 0.5);
  EXPECT_EQ(f->worker, "w0");
  EXPECT_EQ(f->attempts, 1u);
  const LedgerStats s = ledger.stats();
  EXPECT_EQ(s.open, 0);
  EXPECT_EQ(s.finished, 1);
  EXPECT_EQ(s.in_flight, 0);
}

// A worker that resends a finished trajectory after a reconnect, and a resubmitted id.
// Catches: an episode delivered twice (its group would train on one sample twice), or a
// resubmission that opens a closed episode again.
TEST(EpisodeLedgerTest, DropsDuplicatesAndRefusesResubmission) {
  EpisodeLedger ledger(LedgerOptions{});
  ASSERT_TRUE(SubmitAll(ledger, {Request("a")}).ok());
  auto r = ledger.Dispatch(0, 1);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(ledger.Accept(Result(*r), 1, "w0"), EpisodeLedger::Accepted::kClosed);
  EXPECT_EQ(ledger.Accept(Result(*r), 1, "w1"), EpisodeLedger::Accepted::kDuplicate);
  EXPECT_EQ(ledger.Accept(Result(Request("nobody")), 1, "w0"), EpisodeLedger::Accepted::kOrphan);
  EXPECT_EQ(ledger.ready(), 1u);
  EXPECT_EQ(ledger.stats().duplicates_dropped, 1);
  EXPECT_EQ(ledger.stats().orphans_dropped, 1);
  EXPECT_EQ(ledger.Submit({Request("a")}).code(), StatusCode::kAlreadyExists);
  // All or none: a batch with one known id adds nothing.
  EXPECT_FALSE(SubmitAll(ledger, {Request("b"), Request("b")}).ok());
  EXPECT_FALSE(ledger.has_pending());
}

// Catches: a dead worker's episodes lost (never re-run) or re-run behind newer work, and a lost
// worker's late result counted twice.
TEST(EpisodeLedgerTest, RequeuesAWorkersEpisodesWhenItDies) {
  EpisodeLedger ledger(LedgerOptions{});
  ASSERT_TRUE(SubmitAll(ledger, {Request("a"), Request("b"), Request("c")}).ok());
  auto a = ledger.Dispatch(0, 1);
  auto b = ledger.Dispatch(1, 1);
  ASSERT_TRUE(a.has_value() && b.has_value());
  EXPECT_EQ(ledger.LoseWorker(0), 1);
  EXPECT_EQ(ledger.in_flight_on(0), 0);
  EXPECT_EQ(ledger.stats().redispatched, 1);
  // "a" goes before "c", which was waiting behind it.
  auto again = ledger.Dispatch(1, 1);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->episode_id(), "a");
  EXPECT_EQ(again->attempt(), 2u);
  EXPECT_EQ(ledger.Accept(Result(*again), 1, "w1"), EpisodeLedger::Accepted::kClosed);
  // The dead worker's copy arrives late.
  EXPECT_EQ(ledger.Accept(Result(*a), 1, "w0"), EpisodeLedger::Accepted::kDuplicate);
  EXPECT_EQ(ledger.ready(), 1u);
}

// Catches: an episode re-dispatched forever (a request that kills every worker), or a return for
// lack of capacity counted against the episode.
TEST(EpisodeLedgerTest, GivesUpAfterMaxAttemptsButNotForAFullWorker) {
  LedgerOptions o;
  o.max_attempts = 2;
  EpisodeLedger ledger(o);
  ASSERT_TRUE(SubmitAll(ledger, {Request("a")}).ok());
  for (int i = 0; i < 5; ++i) {  // a full worker sends it back: not the episode's fault
    ASSERT_TRUE(ledger.Dispatch(0, 1).has_value());
    ASSERT_TRUE(ledger.Return("a", 0, /*charge=*/false));
  }
  ASSERT_TRUE(ledger.Dispatch(0, 1).has_value());
  EXPECT_FALSE(ledger.Return("a", /*worker=*/1, true));  // not in flight there
  EXPECT_EQ(ledger.LoseWorker(0), 1);
  ASSERT_TRUE(ledger.Dispatch(0, 1).has_value());
  EXPECT_EQ(ledger.LoseWorker(0), 1);
  EXPECT_FALSE(ledger.has_pending());
  auto f = ledger.PopReady();
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->trajectory.failure().reason(), v1::FAILURE_REASON_WORKER_LOST);
  EXPECT_EQ(f->attempts, 2u);
}

// A group comes out whole and in group_index order, whatever order its episodes finish in; a
// failed episode completes its group too. Catches: a group delivered before its last episode, in
// arrival order, or held forever because one episode failed.
TEST(EpisodeLedgerTest, DeliversCompleteGroupsInIndexOrder) {
  EpisodeLedger ledger(LedgerOptions{});
  std::vector<v1::EpisodeRequest> reqs;
  for (uint32_t i = 0; i < 3; ++i) reqs.push_back(Request("g-" + std::to_string(i), "g", i, 3));
  reqs.push_back(Request("solo"));
  ASSERT_TRUE(SubmitAll(ledger, reqs).ok());
  std::vector<v1::EpisodeRequest> sent;
  for (int i = 0; i < 4; ++i) sent.push_back(*ledger.Dispatch(i % 2, 1));
  EXPECT_EQ(ledger.Accept(Result(sent[2]), 1, "w0"), EpisodeLedger::Accepted::kClosed);
  EXPECT_EQ(ledger.Accept(Result(sent[0]), 1, "w0"), EpisodeLedger::Accepted::kClosed);
  EXPECT_EQ(ledger.ready(), 0u);  // two of three
  EXPECT_EQ(ledger.Accept(Result(sent[3]), 1, "w1"), EpisodeLedger::Accepted::kClosed);
  EXPECT_EQ(ledger.PopReadyGroup().size(), 1u);  // the ungrouped one
  EXPECT_TRUE(ledger.Fail("g-1", v1::FAILURE_REASON_ENV_ERROR, "broken", "w1"));
  const std::vector<FinishedEpisode> group = ledger.PopReadyGroup();
  ASSERT_EQ(group.size(), 3u);
  for (uint32_t i = 0; i < 3; ++i) EXPECT_EQ(group[i].trajectory.group_index(), i);
  EXPECT_EQ(group[1].trajectory.failure().reason(), v1::FAILURE_REASON_ENV_ERROR);
  EXPECT_FALSE(ledger.Fail("g-1", v1::FAILURE_REASON_ENV_ERROR, "again", "w1"));
}

// The staleness bound: a trajectory sampled more than max_policy_lag versions ago is run again
// until max_attempts, then closed as stale; without a bound it is kept with its lag. Catches:
// stale samples trained on as fresh, or a lag measured against the dispatch instead of the
// trajectory's own version.
TEST(EpisodeLedgerTest, AppliesTheStalenessBound) {
  LedgerOptions o;
  o.max_policy_lag = 1;
  o.max_attempts = 2;
  EpisodeLedger discard(o);
  ASSERT_TRUE(SubmitAll(discard, {Request("a")}).ok());
  auto r = discard.Dispatch(0, 1);
  EXPECT_EQ(discard.Accept(Result(*r), /*current=*/2, "w0"), EpisodeLedger::Accepted::kClosed);
  ASSERT_TRUE(SubmitAll(discard, {Request("b")}).ok());
  r = discard.Dispatch(0, 1);
  EXPECT_EQ(discard.Accept(Result(*r), 3, "w0"), EpisodeLedger::Accepted::kRequeued);
  EXPECT_TRUE(discard.has_pending());
  r = discard.Dispatch(0, 1);  // sampled at 1 again, and still 2 behind
  EXPECT_EQ(discard.Accept(Result(*r), 3, "w0"), EpisodeLedger::Accepted::kClosed);
  ASSERT_EQ(discard.ready(), 2u);
  discard.PopReady();
  auto stale = discard.PopReady();
  EXPECT_EQ(stale->trajectory.failure().reason(), v1::FAILURE_REASON_STALE);
  EXPECT_EQ(stale->policy_lag, 2);
  EXPECT_EQ(discard.stats().stale_discarded, 2);

  EpisodeLedger unbounded(LedgerOptions{});
  ASSERT_TRUE(SubmitAll(unbounded, {Request("a")}).ok());
  r = unbounded.Dispatch(0, 1);
  EXPECT_EQ(unbounded.Accept(Result(*r), 4, "w0"), EpisodeLedger::Accepted::kClosed);
  auto f = unbounded.PopReady();
  EXPECT_EQ(f->policy_lag, 3);
  EXPECT_EQ(f->trajectory.failure().reason(), v1::FAILURE_REASON_NONE);
}

// An episode pinned to a version keeps it on every dispatch, a re-dispatch after a worker's death
// included; an unpinned one takes the version current at each dispatch. Catches: a pinned
// episode (grpo.async) re-run under a newer policy than its step's.
TEST(EpisodeLedgerTest, PinnedEpisodesKeepTheirVersion) {
  EpisodeLedger ledger(LedgerOptions{});
  v1::EpisodeRequest pinned = Request("pinned");
  pinned.set_policy_version(2);
  ASSERT_TRUE(SubmitAll(ledger, {pinned, Request("free")}).ok());
  auto a = ledger.Dispatch(0, 5);
  auto b = ledger.Dispatch(0, 5);
  ASSERT_TRUE(a.has_value() && b.has_value());
  EXPECT_EQ(a->policy_version(), 2u);
  EXPECT_EQ(b->policy_version(), 5u);
  EXPECT_EQ(ledger.LoseWorker(0), 2);
  std::map<std::string, uint64_t> versions;
  for (int i = 0; i < 2; ++i) {
    auto r = ledger.Dispatch(1, 7);
    ASSERT_TRUE(r.has_value());
    versions[r->episode_id()] = r->policy_version();
  }
  EXPECT_EQ(versions, (std::map<std::string, uint64_t>{{"free", 7}, {"pinned", 2}}));
}

}  // namespace
}  // namespace allot::rollout
