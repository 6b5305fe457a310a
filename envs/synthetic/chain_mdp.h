// ChainMdp: a synthetic logic-block MDP with a known optimal policy, for training and testing
// the navigator without an LLM (configs/quickstart/chain.yaml, the DQN tests and benchmarks).
//
// The state has RLoT's shape, 7 features in 0..3, and the actions are RLoT's five blocks. Only
// one block sequence earns the final reward: following `sequence` exactly and then choosing
// Terminate. Each correct non-terminal step also earns a small process reward (standing in for
// RLoT's per-step PRM score). Like RLoT, at most max_steps blocks run: the decision after them
// is Terminate, forced (five blocks allowed, the sixth decision terminates; notes.md).
//
// Features: [0] steps taken (clipped to 3); [1] 3 while on the rewarded path, else 1;
// [2..6] 3 for the last action taken (one feature per block), else 0.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/config/schema.h"

namespace allot::envs {

struct ChainMdpConfig {
  std::vector<int64_t> sequence = {1, 0, 3};  // Decompose, Reason, Refine; then Terminate
  int terminate_action = 4;
  int max_steps = 5;                          // RLoT: 5 blocks; the 6th decision terminates
  double step_reward = 0.1;                   // per correct non-terminal step (PRM stand-in)
  double final_reward = 1.0;                  // outcome reward for the exact sequence

  void Describe(config::Visitor& v) {
    v.Field("sequence", sequence, {.doc = "the only rewarded block sequence before Terminate", .min = 0.0, .max = 4.0});
    v.Field("terminate_action", terminate_action, {.min = 0.0, .max = 4.0});
    v.Field("max_steps", max_steps,
            {.doc = "blocks before Terminate is forced on the next decision", .min = 1.0});
    v.Field("step_reward", step_reward);
    v.Field("final_reward", final_reward);
  }
};

class ChainMdp {
 public:
  static constexpr int kStateDim = 7;
  static constexpr int kNumActions = 5;
  using State = std::array<float, kStateDim>;

  struct Step {
    State next_state{};
    float reward = 0;
    bool done = false;
    int applied_action = 0;  // after RLoT's forced-Terminate rule
  };

  explicit ChainMdp(ChainMdpConfig config) : config_(std::move(config)) {}

  State Reset() {
    steps_ = 0;
    on_path_ = true;
    last_action_ = -1;
    return Observe();
  }

  Step Act(int action) {
    Step out;
    // RLoT Sec. 3.2: once max_steps blocks ran, Terminate is executed whatever was chosen.
    if (steps_ >= config_.max_steps) action = config_.terminate_action;
    out.applied_action = action;
    const size_t t = static_cast<size_t>(steps_);
    if (action == config_.terminate_action) {
      const bool solved = on_path_ && t == config_.sequence.size();
      out.reward = solved ? static_cast<float>(config_.final_reward) : 0.0f;
      out.done = true;
    } else {
      on_path_ = on_path_ && t < config_.sequence.size() && config_.sequence[t] == action;
      out.reward = on_path_ ? static_cast<float>(config_.step_reward) : 0.0f;
    }
    ++steps_;
    last_action_ = action;
    out.next_state = Observe();
    return out;
  }

  // The optimal action in the current state (for tests).
  int OptimalAction() const {
    const size_t t = static_cast<size_t>(steps_);
    return t < config_.sequence.size() ? static_cast<int>(config_.sequence[t])
                                       : config_.terminate_action;
  }
  // The best achievable return from the start.
  double OptimalReturn() const {
    return config_.final_reward + config_.step_reward * static_cast<double>(config_.sequence.size());
  }

 private:
  State Observe() const {
    State s{};
    s[0] = static_cast<float>(std::min(steps_, 3));
    s[1] = on_path_ ? 3.0f : 1.0f;
    for (int a = 0; a < kNumActions; ++a) s[2 + a] = (a == last_action_) ? 3.0f : 0.0f;
    return s;
  }

  ChainMdpConfig config_;
  int steps_ = 0;
  bool on_path_ = true;
  int last_action_ = -1;
};

}  // namespace allot::envs
