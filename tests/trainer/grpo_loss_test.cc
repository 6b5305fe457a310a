// The GRPO loss family against hand computation on tiny tensors.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "trainer/grpo/advantages.h"
#include "trainer/grpo/kl_estimator.h"
#include "trainer/grpo/lagrange_multiplier.h"
#include "trainer/grpo/overlong_shaping.h"
#include "trainer/grpo/policy_loss.h"
#include "trainer/grpo/rollout_batch.h"

namespace allot::trainer::grpo {
namespace {

at::Tensor T(std::vector<std::vector<float>> rows) {
  const int64_t b = static_cast<int64_t>(rows.size());
  const int64_t t = static_cast<int64_t>(rows[0].size());
  auto out = torch::zeros({b, t});
  for (int64_t i = 0; i < b; ++i) {
    for (int64_t j = 0; j < t; ++j) out[i][j] = rows[i][j];
  }
  return out;
}

TEST(GrpoAdvantageTest, GroupNormalisedWithSampleStd) {
  // Group 0: rewards 1, 0, 0, 1 -> mean 0.5, sample std sqrt(1/3).
  // Group 7: rewards 2, 4 -> mean 3, sample std sqrt(2).
  const auto a = GroupAdvantages({1, 0, 2, 0, 1, 4}, {0, 0, 7, 0, 0, 7}, {.eps = 0.0});
  const double s0 = std::sqrt(1.0 / 3.0);
  EXPECT_NEAR(a[0], 0.5 / s0, 1e-12);
  EXPECT_NEAR(a[1], -0.5 / s0, 1e-12);
  EXPECT_NEAR(a[2], -1.0 / std::sqrt(2.0), 1e-12);
  EXPECT_NEAR(a[5], 1.0 / std::sqrt(2.0), 1e-12);
}

TEST(GrpoAdvantageTest, DrGrpoOnlyCentres) {
  const auto a = GroupAdvantages({1, 0, 0, 1, 3}, {0, 0, 0, 0, 0}, {.normalize_std = false});
  EXPECT_NEAR(a[0], 1.0 - 1.0, 1e-12);
  EXPECT_NEAR(a[1], -1.0, 1e-12);
  EXPECT_NEAR(a[4], 2.0, 1e-12);
}

TEST(GrpoAdvantageTest, ZeroVarianceAndSingletonGroupsGiveZero) {
  const auto a = GroupAdvantages({1, 1, 1, 5}, {0, 0, 0, 1});
  for (double x : a) EXPECT_EQ(x, 0.0);
  EXPECT_TRUE(ZeroVarianceGroup({1, 1, 1}));
  EXPECT_FALSE(ZeroVarianceGroup({1, 1, 0.5}));
}

TEST(GrpoAdvantageTest, StepAdvantagesAreReturnToGoOfGroupNormalisedRewards) {
  // One group, outputs with steps [1, 0] and [0.5]: pooled mean 0.5, sample std 0.5.
  // Normalised (Dr.GRPO-free, eps 0): [1, -1] and [0]. Return-to-go: [0, -1] and [0].
  const auto a = StepAdvantages({{1.0, 0.0}, {0.5}}, {3, 3}, {.eps = 0.0});
  ASSERT_EQ(a[0].size(), 2u);
  EXPECT_NEAR(a[0][0], 1.0 - 1.0, 1e-12);
  EXPECT_NEAR(a[0][1], -1.0, 1e-12);
  EXPECT_NEAR(a[1][0], 0.0, 1e-12);
  const auto centred = StepAdvantages({{1.0, 0.0}, {0.5}}, {3, 3}, {.normalize_std = false});
  EXPECT_NEAR(centred[0][0], 0.5 - 0.5, 1e-12);
  EXPECT_NEAR(centred[0][1], -0.5, 1e-12);
}

TEST(GrpoKlTest, EstimatorsMatchHandValues) {
  // log pi = log 0.5, log pi_ref = log 0.25: log r = log 0.5.
  const auto lp = torch::full({1}, std::log(0.5));
  const auto ref = torch::full({1}, std::log(0.25));
  const double lr = std::log(0.5);
  EXPECT_NEAR(KlPerToken(lp, ref, KlEstimator::kK1).item<double>(), -lr, 1e-6);
  EXPECT_NEAR(KlPerToken(lp, ref, KlEstimator::kK2).item<double>(), 0.5 * lr * lr, 1e-6);
  EXPECT_NEAR(KlPerToken(lp, ref, KlEstimator::kK3).item<double>(), 0.5 - 1.0 - lr, 1e-6);
  EXPECT_FALSE(ParseKlEstimator("k4").ok());
}

PolicyLossInputs Inputs(at::Tensor logp, at::Tensor old, at::Tensor adv, at::Tensor mask) {
  PolicyLossInputs in;
  in.logp = logp.requires_grad_(true);
  in.old_logp = old;
  in.advantages = adv;
  in.mask = mask;
  return in;
}

TEST(GrpoPolicyLossTest, BothClipSidesAreSeparate) {
  // Ratios e^{0.5} = 1.65 (A = +1) and e^{-0.5} = 0.61 (A = -1), eps_low 0.2, eps_high 0.28.
  auto in = Inputs(T({{0.5f, -0.5f}}), T({{0.f, 0.f}}), T({{1.f, -1.f}}), T({{1.f, 1.f}}));
  PolicyLossOptions o{.clip_low = 0.2,
                      .clip_high = 0.28,
                      .aggregation = Aggregation::kTokenMean,
                      .truncated_is = false};
  auto r = ComputePolicyLoss(in, o, TotalsOf(in.mask));
  ASSERT_TRUE(r.ok()) << r.status().message();
  // Token 1: -min(1.65, 1.28) = -1.28. Token 2: -min(-0.61, -0.8) = 0.8. Mean: -0.24.
  EXPECT_NEAR(r->loss.item<double>(), (-1.28 + 0.8) / 2, 1e-6);
  EXPECT_NEAR(r->stats.clip_frac_high, 0.5, 1e-12);
  EXPECT_NEAR(r->stats.clip_frac_low, 0.5, 1e-12);
  // Both tokens are clipped: no gradient flows.
  r->loss.backward();
  EXPECT_NEAR(in.logp.grad().abs().sum().item<double>(), 0.0, 1e-12);
}

TEST(GrpoPolicyLossTest, UnclippedGradientIsMinusAdvantageTimesRatio) {
  auto in = Inputs(T({{0.1f, 0.0f}}), T({{0.f, 0.f}}), T({{2.f, 2.f}}), T({{1.f, 0.f}}));
  PolicyLossOptions o{.aggregation = Aggregation::kTokenMean, .truncated_is = false};
  auto r = ComputePolicyLoss(in, o, TotalsOf(in.mask));
  ASSERT_TRUE(r.ok());
  EXPECT_NEAR(r->loss.item<double>(), -2.0 * std::exp(0.1), 1e-5);
  r->loss.backward();
  EXPECT_NEAR(in.logp.grad()[0][0].item<double>(), -2.0 * std::exp(0.1), 1e-5);
  EXPECT_EQ(in.logp.grad()[0][1].item<double>(), 0.0);  // masked: no loss
}

TEST(GrpoPolicyLossTest, AggregationsDivideAsDocumented) {
  // Per-token losses (ratio 1): -A. Seq 0: A = 1, 1, 1 (3 tokens); seq 1: A = 4 (1 token).
  auto mask = T({{1, 1, 1}, {0, 0, 1}});
  auto adv = T({{1, 1, 1}, {0, 0, 4}});
  auto zero = torch::zeros({2, 3});
  auto run = [&](Aggregation a, double norm_len) {
    auto in = Inputs(zero.clone(), zero, adv, mask);
    PolicyLossOptions o{.aggregation = a, .norm_len = norm_len, .truncated_is = false};
    return ComputePolicyLoss(in, o, TotalsOf(mask))->loss.item<double>();
  };
  EXPECT_NEAR(run(Aggregation::kTokenMean, 1), -(3.0 + 4.0) / 4.0, 1e-6);
  EXPECT_NEAR(run(Aggregation::kSeqMeanTokenMean, 1), -(1.0 + 4.0) / 2.0, 1e-6);
  EXPECT_NEAR(run(Aggregation::kSeqMeanTokenSum, 10), -(3.0 + 4.0) / (2.0 * 10.0), 1e-6);
}

TEST(GrpoPolicyLossTest, MicroBatchesSumToTheFullBatch) {
  auto mask = T({{1, 1, 0}, {0, 1, 1}, {1, 1, 1}});
  auto logp = T({{-1, -2, -3}, {-0.5, -0.1, -0.2}, {-1, -1, -1}});
  auto old = T({{-1.1, -2, -2.9}, {-0.5, -0.3, -0.2}, {-0.9, -1.2, -1}});
  auto adv = T({{1, 1, 1}, {-1, -1, -1}, {0.5, 0.5, 0.5}});
  for (auto agg : {Aggregation::kTokenMean, Aggregation::kSeqMeanTokenMean}) {
    PolicyLossOptions o{.aggregation = agg, .truncated_is = false};
    const auto totals = TotalsOf(mask);
    const double full =
        ComputePolicyLoss(Inputs(logp.clone(), old, adv, mask), o, totals)->loss.item<double>();
    double parts = 0.0;
    for (int64_t i = 0; i < 3; ++i) {
      auto in = Inputs(logp.slice(0, i, i + 1).clone(), old.slice(0, i, i + 1),
                       adv.slice(0, i, i + 1), mask.slice(0, i, i + 1));
      parts += ComputePolicyLoss(in, o, totals)->loss.item<double>();
    }
    EXPECT_NEAR(parts, full, 1e-6);
  }
}

TEST(GrpoPolicyLossTest, TruncatedImportanceWeightsAreCappedAndReported) {
  // old - rollout = log 3 (weight capped at 2) and log 0.5 (weight 0.5).
  auto in = Inputs(T({{0.f, 0.f}}), T({{0.f, 0.f}}), T({{1.f, 1.f}}), T({{1.f, 1.f}}));
  in.rollout_logp = T({{static_cast<float>(-std::log(3.0)), static_cast<float>(std::log(2.0))}});
  PolicyLossOptions o{.aggregation = Aggregation::kTokenMean, .truncated_is_cap = 2.0};
  auto r = ComputePolicyLoss(in, o, TotalsOf(in.mask));
  ASSERT_TRUE(r.ok());
  EXPECT_NEAR(r->loss.item<double>(), -(2.0 + 0.5) / 2.0, 1e-6);
  EXPECT_NEAR(r->stats.is_weight_mean, 1.25, 1e-6);
  EXPECT_NEAR(r->stats.is_truncated_frac, 0.5, 1e-12);
}

TEST(GrpoPolicyLossTest, GspoRatioIsTheGeometricMeanOverTheSequence) {
  // log ratios 0.3 and 0.1 on two trainable tokens -> s = exp(0.2) on both tokens; the third
  // token is masked and must not enter the mean.
  auto in = Inputs(T({{0.3f, 0.1f, 5.0f}}), T({{0.f, 0.f, 0.f}}), T({{1.f, 1.f, 1.f}}),
                   T({{1.f, 1.f, 0.f}}));
  PolicyLossOptions o{.clip_low = 1.0,
                      .clip_high = 1.0,
                      .policy_loss = "gspo",
                      .aggregation = Aggregation::kTokenMean,
                      .truncated_is = false};
  auto r = ComputePolicyLoss(in, o, TotalsOf(in.mask));
  ASSERT_TRUE(r.ok());
  EXPECT_NEAR(r->stats.ratio_mean, std::exp(0.2), 1e-6);
  EXPECT_NEAR(r->loss.item<double>(), -std::exp(0.2), 1e-6);
  // GSPO-token: d/dlogp_t of sg[s] * exp(logp_t - sg[logp_t]) * A / n = s * A / n per token.
  r->loss.backward();
  EXPECT_NEAR(in.logp.grad()[0][0].item<double>(), -std::exp(0.2) / 2.0, 1e-6);
  // With GSPO's small clip range the whole sequence is clipped together.
  auto in2 = Inputs(T({{0.3f, 0.1f}}), T({{0.f, 0.f}}), T({{1.f, 1.f}}), T({{1.f, 1.f}}));
  o.clip_low = 3e-4;
  o.clip_high = 4e-4;
  auto r2 = ComputePolicyLoss(in2, o, TotalsOf(in2.mask));
  EXPECT_NEAR(r2->stats.clip_frac_high, 1.0, 1e-12);
}

TEST(GrpoPolicyLossTest, KlTermUsesTheReferenceAndIsSkippableAtBetaZero) {
  auto in = Inputs(T({{std::log(0.5f)}}), T({{std::log(0.5f)}}), T({{0.f}}), T({{1.f}}));
  PolicyLossOptions o{
      .aggregation = Aggregation::kTokenMean, .kl_coef = 0.1, .truncated_is = false};
  EXPECT_FALSE(ComputePolicyLoss(in, o, TotalsOf(in.mask)).ok());  // beta > 0 needs ref
  in.ref_logp = T({{std::log(0.25f)}});
  auto r = ComputePolicyLoss(in, o, TotalsOf(in.mask));
  ASSERT_TRUE(r.ok());
  const double k3 = 0.5 - 1.0 - std::log(0.5);
  EXPECT_NEAR(r->loss.item<double>(), 0.1 * k3, 1e-6);
  EXPECT_NEAR(r->stats.kl, k3, 1e-6);
  o.kl_coef = 0.0;
  in.ref_logp = at::Tensor();
  EXPECT_TRUE(ComputePolicyLoss(in, o, TotalsOf(in.mask)).ok());
}

TEST(GrpoOverlongTest, DapoRamp) {
  OverlongOptions o{.max_tokens = 100, .buffer = 20, .penalty = 1.0};
  EXPECT_EQ(OverlongPenalty(80, o), 0.0);
  EXPECT_NEAR(OverlongPenalty(90, o), -0.5, 1e-12);
  EXPECT_NEAR(OverlongPenalty(100, o), -1.0, 1e-12);
  EXPECT_NEAR(OverlongPenalty(150, o), -1.0, 1e-12);
  EXPECT_EQ(OverlongPenalty(150, {.max_tokens = 100, .buffer = 0}), 0.0);
}

// Multi-turn episodes are shaped per turn. Catches the learner comparing a whole episode with
// one turn's budget: three 6-token turns of an 8-token budget each sum to 18 tokens, which the
// old shaping (OverlongPenalty(TrainableTokens(t)) with max_tokens 8) punished fully (-1),
// though no turn came near its own limit's end.
TEST(GrpoOverlongTest, EachTurnAgainstItsOwnBudgetAndTheEpisodeTakesTheWorst) {
  const OverlongOptions o{.max_tokens = 8, .buffer = 4, .penalty = 1.0};
  // Each turn: 6 tokens, 2 into the 4-token window before 8: -0.5.
  EXPECT_NEAR(EpisodeOverlongPenalty({{6, 8}, {6, 8}, {6, 8}}, o), -0.5, 1e-12);
  EXPECT_NEAR(OverlongPenalty(18, o), -1.0, 1e-12);  // the whole episode against one budget
  // The worst turn, not the sum (-0.75) nor the mean: one turn at its budget is -1.
  EXPECT_NEAR(EpisodeOverlongPenalty({{6, 8}, {5, 8}, {8, 8}}, o), -1.0, 1e-12);
  EXPECT_NEAR(EpisodeOverlongPenalty({{6, 8}, {5, 8}}, o), -0.5, 1e-12);
  // A turn's own budget decides, not options.max_tokens: 6 tokens of a 6-token budget are at
  // the limit; 6 of 100 are nowhere near it. A turn with no recorded budget uses max_tokens.
  EXPECT_NEAR(EpisodeOverlongPenalty({{6, 6}}, o), -1.0, 1e-12);
  EXPECT_EQ(EpisodeOverlongPenalty({{6, 100}}, o), 0.0);
  EXPECT_NEAR(EpisodeOverlongPenalty({{7, 0}}, o), -0.75, 1e-12);
  // The window never reaches past the start of a short budget: 1 of 2 tokens is halfway.
  EXPECT_NEAR(EpisodeOverlongPenalty({{1, 2}}, o), -0.5, 1e-12);
  EXPECT_EQ(EpisodeOverlongPenalty({}, o), 0.0);
  EXPECT_EQ(EpisodeOverlongPenalty({{8, 8}}, {.max_tokens = 8, .buffer = 0}), 0.0);
}

// The turns the shaping sees: each trainable segment with the budget the env recorded.
TEST(GrpoOverlongTest, PolicyTurnsAreTheTrainableSegmentsWithTheirBudgets) {
  v1::Trajectory t;
  auto* p = t.add_segments();
  p->set_role(v1::SEGMENT_ROLE_PROMPT);
  for (int id : {1, 2, 3}) p->add_ids(id);
  for (int n : {4, 2}) {
    auto* a = t.add_segments();
    a->set_role(v1::SEGMENT_ROLE_POLICY);
    a->set_trainable(true);
    a->set_max_tokens(static_cast<uint32_t>(2 * n));
    for (int k = 0; k < n; ++k) a->add_ids(7);
    auto* tool = t.add_segments();
    tool->set_role(v1::SEGMENT_ROLE_TOOL);
    for (int k = 0; k < 9; ++k) tool->add_ids(8);
  }
  const std::vector<PolicyTurn> turns = PolicyTurns(t);
  ASSERT_EQ(turns.size(), 2u);
  EXPECT_EQ(turns[0].tokens, 4);
  EXPECT_EQ(turns[0].budget, 8);
  EXPECT_EQ(turns[1].tokens, 2);
  EXPECT_EQ(turns[1].budget, 4);
}

// Dynamic sampling's test of a group is the advantages' own input. Catches judging flatness on
// the raw outcome alone: DeepTool's step-wise instances have outcome 0 in every episode and
// their signal in the step rewards, so every group looked flat and was dropped.
TEST(GrpoAdvantageTest, FlatGroupLooksAtTheStepRewardsToo) {
  EXPECT_TRUE(FlatGroup({0, 0, 0}, {}));
  EXPECT_TRUE(FlatGroup({0, 0, 0}, {{}, {}, {}}));
  EXPECT_TRUE(FlatGroup({1, 1}, {{0.5}, {0.5}}));
  EXPECT_FALSE(FlatGroup({0, 0, 0}, {{0.2}, {0.9}, {0.2}}));  // outcome flat, steps not
  EXPECT_FALSE(FlatGroup({0, 1}, {{0.5}, {0.5}}));
  // Flat exactly when both advantage kinds are 0 for every output.
  const std::vector<int64_t> g = {0, 0, 0};
  const auto step = StepAdvantages({{0.2}, {0.9}, {0.2}}, g);
  EXPECT_NE(step[1][0], 0.0);
  for (double a : GroupAdvantages({0, 0, 0}, g)) EXPECT_EQ(a, 0.0);
}

TEST(GrpoLagrangeTest, DualAscentAndShaping) {
  LagrangeMultiplier lm(/*budget=*/2.0, /*lr=*/0.5, /*initial=*/0.0);
  // Mean cost 3 over a budget of 2: violation 0.5, lambda 0 + 0.5 * 0.5 = 0.25.
  EXPECT_NEAR(lm.Update({2.0, 4.0}), 0.25, 1e-12);
  EXPECT_NEAR(lm.last_violation(), 0.5, 1e-12);
  const auto shaped = lm.Shape({1.0, 1.0}, {2.0, 4.0});
  EXPECT_NEAR(shaped[0], 1.0 - 0.25 * 1.0, 1e-12);
  EXPECT_NEAR(shaped[1], 1.0 - 0.25 * 2.0, 1e-12);
  // Under budget (mean 1): lambda falls and is projected at 0.
  EXPECT_NEAR(lm.Update({1.0, 1.0}), 0.0, 1e-12);
}

v1::Trajectory MakeTrajectory() {
  v1::Trajectory t;
  t.set_episode_id("e1");
  auto* p = t.add_segments();
  p->set_role(v1::SEGMENT_ROLE_PROMPT);
  for (int id : {5, 6}) p->add_ids(id);
  auto* a = t.add_segments();
  a->set_role(v1::SEGMENT_ROLE_POLICY);
  a->set_trainable(true);
  a->set_step(1);
  for (int id : {7, 8}) a->add_ids(id);
  for (float lp : {-0.5f, -0.25f}) a->add_logprobs(lp);
  auto* tool = t.add_segments();
  tool->set_role(v1::SEGMENT_ROLE_TOOL);
  tool->add_ids(9);
  auto* b = t.add_segments();
  b->set_role(v1::SEGMENT_ROLE_POLICY);
  b->set_trainable(true);
  b->set_step(2);
  b->add_ids(10);
  b->add_logprobs(-1.0f);
  return t;
}

TEST(GrpoRolloutBatchTest, OnlyPolicySegmentsCarryLossWithStepAdvantages) {
  v1::Trajectory long_t = MakeTrajectory();
  v1::Trajectory short_t;
  auto* s = short_t.add_segments();
  s->set_trainable(true);
  for (int id : {1, 2}) s->add_ids(id);
  auto batch = BuildRolloutBatch({{&long_t, 1.0, {0.5, -2.0}}, {&short_t, -1.0, {}}},
                                 /*pad_id=*/0);
  ASSERT_TRUE(batch.ok()) << batch.status().message();
  // Long: ids 5 6 7 8 9 10 (T = 6); targets are columns 0..4 = tokens 6 7 8 9 10.
  EXPECT_TRUE(torch::equal(batch->loss_mask[0], torch::tensor({0.f, 1.f, 1.f, 0.f, 1.f})));
  EXPECT_TRUE(torch::allclose(batch->advantages[0], torch::tensor({0.f, 1.5f, 1.5f, 0.f, -1.f})));
  EXPECT_TRUE(
      torch::allclose(batch->rollout_logp[0], torch::tensor({0.f, -0.5f, -0.25f, 0.f, -1.f})));
  // Short: left-padded by 4; its first token has no prefix, so only token 2 is a target.
  EXPECT_TRUE(
      torch::equal(batch->attention_mask[1], torch::tensor({0, 0, 0, 0, 1, 1}, torch::kInt64)));
  EXPECT_TRUE(torch::equal(batch->loss_mask[1], torch::tensor({0.f, 0.f, 0.f, 0.f, 1.f})));
  EXPECT_EQ(batch->trainable_tokens, 4);
  // A micro-batch of the short row drops its all-pad columns.
  auto micro = SliceRows(*batch, 1, 2);
  EXPECT_EQ(micro.input_ids.size(1), 2);
  EXPECT_EQ(micro.trainable_tokens, 1);
}

TEST(GrpoRolloutBatchTest, MismatchedLogprobsAreAnError) {
  v1::Trajectory t = MakeTrajectory();
  t.mutable_segments(1)->add_logprobs(-3.0f);
  auto batch = BuildRolloutBatch({{&t, 0.0, {}}});
  ASSERT_FALSE(batch.ok());
  EXPECT_NE(batch.status().message().find("e1"), std::string::npos);
}

}  // namespace
}  // namespace allot::trainer::grpo
