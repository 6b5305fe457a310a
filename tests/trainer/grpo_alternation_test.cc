// Alternating GRPO (R2-Reasoner Sec. 4.3): the role schedule, the role tags, and that the
// frozen role's segments carry no loss and no gradient while the active role's do.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "trainer/grpo/alternation.h"
#include "trainer/grpo/policy_loss.h"
#include "trainer/grpo/rollout_batch.h"

namespace allot::trainer::grpo {
namespace {

void Add(v1::Trajectory& t, v1::SegmentRole role, bool trainable, std::vector<uint32_t> ids,
         const std::string& source) {
  v1::TokenSegment* s = t.add_segments();
  s->set_role(role);
  s->set_trainable(trainable);
  for (uint32_t id : ids) {
    s->add_ids(id);
    if (trainable) s->add_logprobs(-0.7f);
  }
  s->set_source(source);
}

// What envs/r2 sends: prompt, decomposition, allocator prompt, allocation, an executor result.
v1::Trajectory R2Trajectory() {
  v1::Trajectory t;
  t.set_episode_id("e");
  Add(t, v1::SEGMENT_ROLE_PROMPT, false, {1, 2, 3, 4}, "router");
  Add(t, v1::SEGMENT_ROLE_POLICY, true, {5, 6, 7}, "decomposer@router");
  Add(t, v1::SEGMENT_ROLE_ENV, false, {8, 9}, "router");
  Add(t, v1::SEGMENT_ROLE_POLICY, true, {10, 11}, "allocator@router");
  Add(t, v1::SEGMENT_ROLE_TOOL, false, {12, 13}, "small");
  return t;
}

// d loss / d logp of every output column, for one trajectory with advantage 1.
std::vector<float> TokenGradients(const v1::Trajectory& t) {
  Result<RolloutBatch> b = BuildRolloutBatch({Sample{&t, 1.0, {}, 1.0}});
  EXPECT_TRUE(b.ok()) << b.status().ToString();
  PolicyLossInputs in;
  in.logp = b->rollout_logp.clone().requires_grad_(true);
  in.old_logp = b->rollout_logp.clone();
  in.advantages = b->advantages;
  in.mask = b->loss_mask;
  in.weights = b->weights;
  Result<PolicyLossResult> r = ComputePolicyLoss(in, PolicyLossOptions{}, TotalsOf(in.mask));
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  r->loss.backward();
  at::Tensor g = in.logp.grad().reshape({-1}).contiguous();
  return std::vector<float>(g.data_ptr<float>(), g.data_ptr<float>() + g.numel());
}

TEST(GrpoAlternationTest, TheActiveRoleSwitchesEveryKSteps) {
  AlternationConfig c;
  EXPECT_EQ(ActiveRole(c, 0), "");  // off by default
  c.enabled = true;
  c.switch_every = 2;
  std::vector<std::string> roles;
  for (int64_t step = 0; step < 5; ++step) roles.push_back(ActiveRole(c, step));
  EXPECT_EQ(roles, (std::vector<std::string>{"decomposer", "decomposer", "allocator", "allocator",
                                             "decomposer"}));
}

// Table 7: GRPO lr 1e-4 for the decomposer, 1.5e-4 for the allocator, through one schedule.
TEST(GrpoAlternationTest, EachRoleTrainsAtItsOwnLearningRate) {
  GrpoConfig g;
  g.lr = 1e-4;
  g.alternation.enabled = true;
  g.alternation.switch_every = 3;
  g.alternation.lr = {1e-4, 1.5e-4};
  EXPECT_DOUBLE_EQ(RoleLearningRate(g, 0, 1e-4), 1e-4);
  EXPECT_DOUBLE_EQ(RoleLearningRate(g, 3, 1e-4), 1.5e-4);
  EXPECT_DOUBLE_EQ(RoleLearningRate(g, 4, 0.5e-4), 0.75e-4);  // a schedule at half its peak
  EXPECT_DOUBLE_EQ(RoleLearningRate(g, 6, 1e-4), 1e-4);
  EXPECT_TRUE(ValidateAlternation(g.alternation).ok());
  g.alternation.lr = {1e-4};
  EXPECT_FALSE(ValidateAlternation(g.alternation).ok());
  g.alternation.enabled = false;
  EXPECT_DOUBLE_EQ(RoleLearningRate(g, 3, 2e-4), 2e-4);
}

TEST(GrpoAlternationTest, RoleTagsAreTheSourcePrefix) {
  v1::TokenSegment s;
  s.set_source("decomposer@router");
  EXPECT_TRUE(SegmentHasRole(s, "decomposer"));
  EXPECT_FALSE(SegmentHasRole(s, "allocator"));
  EXPECT_FALSE(SegmentHasRole(s, "decomp"));
  s.set_source("decomposer");
  EXPECT_TRUE(SegmentHasRole(s, "decomposer"));
  s.set_source("decomposers@x");
  EXPECT_FALSE(SegmentHasRole(s, "decomposer"));
}

TEST(GrpoAlternationTest, FrozenRoleSegmentsCarryNoGradient) {
  // Target token j is scored at output column j - 1: the decomposition's ids (j = 4..6) at
  // columns 3..5, the allocation's (j = 9, 10) at 8..9.
  const std::vector<int> decomposer = {3, 4, 5}, allocator = {8, 9};

  const std::vector<float> both = TokenGradients(R2Trajectory());
  for (int c : decomposer) EXPECT_NE(both[c], 0.0f) << c;
  for (int c : allocator) EXPECT_NE(both[c], 0.0f) << c;

  v1::Trajectory t = R2Trajectory();
  EXPECT_EQ(FreezeInactiveRoles(t, "decomposer"), 2);
  EXPECT_TRUE(t.segments(1).trainable());
  EXPECT_FALSE(t.segments(3).trainable());
  const std::vector<float> d = TokenGradients(t);
  for (int c : decomposer) EXPECT_NE(d[c], 0.0f) << c;
  for (size_t c = 0; c < d.size(); ++c) {
    if (c < 3 || c > 5) {
      EXPECT_EQ(d[c], 0.0f) << c;
    }
  }

  t = R2Trajectory();
  EXPECT_EQ(FreezeInactiveRoles(t, "allocator"), 3);
  const std::vector<float> a = TokenGradients(t);
  for (int c : allocator) EXPECT_NE(a[c], 0.0f) << c;
  for (int c : decomposer) EXPECT_EQ(a[c], 0.0f) << c;
  EXPECT_EQ(TrainableTokens(t), 2);
}

TEST(GrpoAlternationTest, UntaggedPolicySegmentsAreFrozenToo) {
  v1::Trajectory t;
  Add(t, v1::SEGMENT_ROLE_POLICY, true, {1, 2}, "router");
  EXPECT_EQ(FreezeInactiveRoles(t, "decomposer"), 2);
  EXPECT_EQ(TrainableTokens(t), 0);
  EXPECT_EQ(t.failure().reason(), v1::FAILURE_REASON_FORMAT_ERROR);
  EXPECT_NE(t.failure().message().find("'decomposer'"), std::string::npos);
  // An episode that keeps a segment of the active role is not failed.
  v1::Trajectory r2 = R2Trajectory();
  FreezeInactiveRoles(r2, "allocator");
  EXPECT_EQ(r2.failure().reason(), v1::FAILURE_REASON_NONE);
}

}  // namespace
}  // namespace allot::trainer::grpo
