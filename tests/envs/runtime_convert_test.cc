// The trajectory contract across hosts: a plain runtime trajectory converts to the wire
// message and back, the wire validator checks the per-step fields, and an env built by the
// rollout registry runs on the input the worker builds from the request.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>

#include "rollout/env_registry.h"
#include "rollout/trajectory_convert.h"
#include "rollout/validate.h"

namespace allot::envs::runtime {
namespace {

Trajectory Sample() {
  Trajectory t;
  t.policy_version = 4;
  t.segments.push_back({SegmentRole::kPrompt, false, {1, 2}, {}, 0, 1, 0, "router"});
  t.segments.push_back(
      {SegmentRole::kPolicy, true, {3, 4, 5}, {-0.1f, -0.2f, -0.3f}, 4, 1, 0, "router"});
  t.segments.push_back({SegmentRole::kOtherModel, false, {6}, {}, 0, 2, 0, "large"});
  t.segments.push_back({SegmentRole::kEnv, false, {7}, {}, 0, 2, 0, "env"});
  t.SetReward("format", 1.0);
  t.SetReward("accuracy", 0.0);
  t.SetReward("format", 0.5);  // replaces, keeps the order
  t.reward = 0.5;
  t.step_rewards = {0.25, 0.75};
  t.info["level"] = "L2";
  llm::CallRecord r;
  r.endpoint = "router";
  r.ok = true;
  r.prompt_tokens = 10;
  r.completion_tokens = 3;
  r.latency_s = 0.5;
  r.cost_usd = 0.01;
  r.energy_j = 2.0;
  t.usage.Add(r);
  t.tool_calls = 2;
  t.latency_ms = 12.5;
  return t;
}

TEST(RuntimeConvertTest, RoundTripsAndValidates) {
  const Trajectory t = Sample();
  v1::Trajectory p = rollout::ToProto(t);
  p.set_episode_id("e1");
  ASSERT_TRUE(rollout::ValidateTrajectory(p).ok()) << rollout::ValidateTrajectory(p).ToString();
  ASSERT_EQ(p.segments_size(), 4);
  EXPECT_EQ(p.segments(1).role(), v1::SEGMENT_ROLE_POLICY);
  EXPECT_TRUE(p.segments(1).trainable());
  EXPECT_EQ(p.segments(1).policy_version(), 4u);
  EXPECT_EQ(p.segments(2).role(), v1::SEGMENT_ROLE_TOOL);  // another model's output is masked
  EXPECT_EQ(p.segments(2).step(), 2u);
  ASSERT_EQ(p.rewards_size(), 2);
  EXPECT_EQ(p.rewards(0).name(), "format");
  EXPECT_EQ(p.rewards(0).value(), 0.5);
  EXPECT_EQ(p.step_rewards_size(), 2);
  EXPECT_EQ(p.accounting().llm_calls(), 1u);
  EXPECT_EQ(p.accounting().tool_calls(), 2u);
  ASSERT_EQ(p.accounting().endpoints_size(), 1);
  EXPECT_DOUBLE_EQ(p.accounting().endpoints(0).latency_ms(), 500.0);

  Trajectory back = rollout::FromProto(p);
  EXPECT_EQ(back.AllIds(), t.AllIds());
  EXPECT_EQ(back.rewards, t.rewards);
  EXPECT_EQ(back.step_rewards, t.step_rewards);
  EXPECT_EQ(back.segments[1].logprobs, t.segments[1].logprobs);
  EXPECT_EQ(back.usage.by_endpoint.at("router").completion_tokens, 3);
  EXPECT_EQ(back.info, t.info);
}

TEST(RuntimeConvertTest, ValidatorChecksStepsAgainstStepRewards) {
  Trajectory t = Sample();
  t.segments[3].step = 3;  // only two step rewards
  v1::Trajectory p = rollout::ToProto(t);
  p.set_episode_id("e1");
  Status s = rollout::ValidateTrajectory(p);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("segments[3].step"), std::string::npos) << s.message();
  // Without step rewards, steps are free (outcome-only trajectories).
  t.step_rewards.clear();
  p = rollout::ToProto(t);
  p.set_episode_id("e1");
  EXPECT_TRUE(rollout::ValidateTrajectory(p).ok());
  t = Sample();
  t.step_rewards[1] = std::nan("");
  p = rollout::ToProto(t);
  p.set_episode_id("e1");
  EXPECT_NE(rollout::ValidateTrajectory(p).message().find("step_rewards"), std::string::npos);
}

TEST(RuntimeConvertTest, BadIdsAndOversizedInfoNeverWrapSilently) {
  Trajectory t = Sample();
  t.segments[0].ids = {-1};
  t.info["long"] = std::string(10000, 'x');
  v1::Trajectory p = rollout::ToProto(t);
  p.set_episode_id("e1");
  EXPECT_LE(p.info().at("long").size(), 4096u);
  EXPECT_FALSE(rollout::ValidateTrajectory(p).ok()) << "a negative id must not become a valid id";
}

// Echoes what it was given, to check the request mapping.
class EchoInputEnv : public Env {
 public:
  Result<Trajectory> Run(const EpisodeInput& in) override {
    Trajectory t;
    t.info["item"] = in.dataset_item;
    t.info["temperature"] = std::to_string(in.sampling.temperature);
    t.info["seed"] = std::to_string(in.seed);
    t.info["group"] =
        in.group_id + "/" + std::to_string(in.group_index) + "/" + std::to_string(in.group_size);
    t.info["epsilon"] = in.sampling.epsilon ? std::to_string(*in.sampling.epsilon) : "none";
    t.info["policy"] =
        in.policy ? std::to_string(in.policy->version) + ":" + in.policy->adapter_name +
                        (in.policy->kind == PolicySnapshot::Kind::kLoraAdapter ? ":lora" : ":other")
                  : "none";
    t.info["cancelled"] = in.Cancelled() ? "1" : "0";
    t.SetReward("r", 1.0);
    t.reward = 1.0;
    return t;
  }
};

TEST(RuntimeConvertTest, RegistryBuildsEnvsThatRunOnTheRequestsInput) {
  rollout::EnvRegistry registry;
  registry.Register("echo_input", [](const std::string&) -> Result<std::unique_ptr<Env>> {
    return std::unique_ptr<Env>(new EchoInputEnv());
  });
  ASSERT_TRUE(registry.Has("echo_input"));
  auto env = registry.Create("echo_input", "");
  ASSERT_TRUE(env.ok());
  v1::EpisodeRequest req;
  req.set_episode_id("e9");
  req.set_dataset_item(R"({"question":"q"})");
  req.mutable_sampling()->set_temperature(0.5f);
  req.set_seed(11);
  req.set_group_id("g");
  req.set_group_index(3);
  req.set_group_size(4);
  req.set_epsilon(0.25);
  auto policy = std::make_shared<PolicySnapshot>();
  policy->version = 6;
  policy->kind = PolicySnapshot::Kind::kLoraAdapter;
  policy->adapter_name = "router-v6";
  std::atomic<bool> cancelled{false};
  // As the worker does: the request's fields, then the host's policy and cancellation flag.
  EpisodeInput input = rollout::ToEpisodeInput(req);
  input.policy = policy;
  input.cancelled = &cancelled;
  auto run = (*env)->Run(input);
  ASSERT_TRUE(run.ok());
  const v1::Trajectory t = rollout::ToProto(*run);
  EXPECT_EQ(t.info().at("item"), R"({"question":"q"})");
  EXPECT_EQ(t.info().at("temperature"), std::to_string(0.5));
  EXPECT_EQ(t.info().at("seed"), "11");
  EXPECT_EQ(t.info().at("group"), "g/3/4");
  EXPECT_EQ(t.info().at("epsilon"), std::to_string(0.25));
  EXPECT_EQ(t.info().at("policy"), "6:router-v6:lora");
  EXPECT_EQ(t.info().at("cancelled"), "0");
  cancelled = true;
  EXPECT_EQ((*env)->Run(input)->info.at("cancelled"), "1");
  EXPECT_EQ(t.reward(), 1.0);

  // A request without an exploration rate leaves the navigator's own.
  req.clear_epsilon();
  EXPECT_FALSE(rollout::ToEpisodeInput(req).sampling.epsilon.has_value());
}

}  // namespace
}  // namespace allot::envs::runtime
