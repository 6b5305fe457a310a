// DeepTool's action-centric process reward (DeepTool Sec. 2.3.2, Eq. 6-8; notes.md):
//   R_k = gate(step k follows the format of its phase) * Sim(action_k, reference_action_k),
// with Sim the Gestalt (Ratcliff/Obershelp) ratio of gestalt.h. The thought is excluded from
// the similarity, so diverse reasoning is free as long as the action converges.
//
// The paper's schemas (lost in our copy of the text) separate thought, tool call and final
// answer. allot writes them as tags, configurable here:
//   intermediate tool step:  <think>...</think> <code>...</code>
//   terminal answer step:    <think>...</think> <answer>...</answer>
// The observation is the environment's, never part of the model's output. The gate passes when
// the output is exactly one think block followed by exactly one action block of the same phase
// as the reference step, with nothing but whitespace around them.
#pragma once

#include <string>
#include <string_view>

#include "core/config/schema.h"
#include "rewards/reward_term.h"

namespace allot::rewards {

struct ActionRewardConfig {
  std::string think_tag = "think";
  std::string tool_tag = "code";
  std::string answer_tag = "answer";
  int64_t max_action_chars = 4096;  // longer actions are cut before the O(n*m) similarity

  void Describe(config::Visitor& v) {
    v.Field("think_tag", think_tag, {.doc = "tag of the thought block"});
    v.Field("tool_tag", tool_tag, {.doc = "tag of a tool call (intermediate step)"});
    v.Field("answer_tag", answer_tag, {.doc = "tag of the final answer (terminal step)"});
    v.Field("max_action_chars", max_action_chars,
            {.doc = "actions are truncated to this many characters for the similarity", .min = 1});
  }
};

struct ToolStep {
  std::string think;
  std::string action;
  bool terminal = false;  // the action is the final answer
};

// Parses one step; InvalidArgument says how it breaks the schema.
Result<ToolStep> ParseToolStep(std::string_view output, const ActionRewardConfig& config = {});

class ActionCentricReward : public RewardTerm {
 public:
  explicit ActionCentricReward(ActionRewardConfig config = {}) : config_(std::move(config)) {}
  std::string name() const override { return "action"; }
  // RewardInput::response is the generated step, ::reference_step the expert's. An expert step
  // that does not parse is an error (bad data), not a zero.
  Result<double> Compute(const RewardInput& input) const override;

 private:
  ActionRewardConfig config_;
};

}  // namespace allot::rewards
