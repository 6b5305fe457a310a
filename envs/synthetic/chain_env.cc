#include "envs/synthetic/chain_env.h"

#include <chrono>
#include <cstddef>
#include <random>
#include <span>

#include "core/config/binder.h"
#include "core/config/node.h"
#include "envs/rlot/logic_block.h"
#include "envs/synthetic/chain_episode.h"

namespace allot::envs {
namespace {

std::vector<float> CopyState(const ChainMdp::State& s) { return {s.begin(), s.end()}; }

}  // namespace

std::string ChainEnvConfigText(const ChainMdpConfig& c) {
  std::string seq;
  for (size_t i = 0; i < c.sequence.size(); ++i) {
    seq += (i ? ", " : "") + std::to_string(c.sequence[i]);
  }
  // %.17g keeps the doubles exact across the wire.
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "{\"terminate_action\": %d, \"max_steps\": %d, \"step_reward\": %.17g, "
                "\"final_reward\": %.17g, ",
                c.terminate_action, c.max_steps, c.step_reward, c.final_reward);
  return std::string(buf) + "\"sequence\": [" + seq + "]}";
}

Result<std::unique_ptr<ChainEnv>> ChainEnv::Create(const std::string& env_config) {
  ChainMdpConfig config;
  if (!env_config.empty()) {
    ALLOT_ASSIGN_OR_RETURN(config::ConfigNode node, config::ParseYaml(env_config, "env_config"));
    ALLOT_RETURN_IF_ERROR(config::Load(node, config));
  }
  for (int64_t a : config.sequence) {
    if (a < 0 || a >= ChainMdp::kNumActions || a == config.terminate_action) {
      return InvalidArgument("env_config: sequence holds " + std::to_string(a) +
                             ", which is not a non-terminal block");
    }
  }
  return std::make_unique<ChainEnv>(std::move(config));
}

Result<runtime::Trajectory> ChainEnv::Run(const runtime::EpisodeInput& input) {
  const auto started = std::chrono::steady_clock::now();
  runtime::Trajectory traj;
  traj.policy_version = input.policy_version();
  auto nav = navigators_.Get(input.policy);
  if (!nav.ok()) {
    traj.failure = {runtime::FailureReason::kEnvError, nav.status().message()};
    return traj;
  }
  // Epsilon-greedy with the learner's epsilon (RLoT Section 3.3), which travels in its own
  // field; unset means greedy. Before any navigator exists, uniform.
  const double epsilon = (*nav == nullptr) ? 1.0 : input.sampling.epsilon.value_or(0.0);
  std::mt19937_64 rng(input.seed);
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  std::uniform_int_distribution<int> any(0, ChainMdp::kNumActions - 1);

  ChainMdp mdp(config_);
  double prm = 0, outcome = 0;
  std::string blocks;
  const double ret = RunChainEpisode(
      mdp,
      [&](const ChainMdp::State& s) {
        return coin(rng) < epsilon ? any(rng) : (*nav)->Greedy(s);
      },
      [&](const ChainEpisodeStep& s) {
        runtime::Transition t;
        t.state = CopyState(s.state);
        t.action = static_cast<uint32_t>(s.step.applied_action);
        t.reward = static_cast<float>(s.step.reward);
        t.next_state = CopyState(s.step.next_state);
        t.done = s.step.done;
        t.num_actions = ChainMdp::kNumActions;
        traj.transitions.push_back(std::move(t));
        (s.step.done ? outcome : prm) += s.step.reward;
        if (!blocks.empty()) blocks += "-";
        blocks += rlot::LogicBlockName(s.step.applied_action);
      },
      [&] {
        if (!input.Cancelled()) return false;
        traj.failure = {runtime::FailureReason::kCancelled, "cancelled"};
        return true;
      });
  traj.reward = ret;
  traj.SetReward("outcome", outcome);
  traj.SetReward("prm", prm);
  traj.info["blocks"] = blocks;
  traj.latency_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  return traj;
}

void RegisterChainEnv(runtime::EnvRegistrar& registry) {
  registry.Register(
      "chain", [](const std::string& env_config) -> Result<std::unique_ptr<runtime::Env>> {
        ALLOT_ASSIGN_OR_RETURN(std::unique_ptr<ChainEnv> env, ChainEnv::Create(env_config));
        return std::unique_ptr<runtime::Env>(std::move(env));
      });
}

const runtime::EnvDescriptor& ChainEnvDescriptor() {
  static const runtime::EnvDescriptor kDescriptor{
      "chain", runtime::EnvKind::kNavigator, {}, &RegisterChainEnv, nullptr, false};
  return kDescriptor;
}

}  // namespace allot::envs
