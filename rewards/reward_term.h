// The reward-term interface and what a term reads from an episode.
//
// Every term is a small class that cites the paper fixing its formula and returns its own
// unweighted value; ComposedReward (composed_reward.h) weights and sums them and reports each
// value separately, so that a trajectory carries every component.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "rewards/answer_extractor.h"

namespace allot::rewards {

// What the endpoint client accounted for the episode (R2-Reasoner Sec. 5.1 metrics).
struct CostUsage {
  double cost_usd = 0.0;       // API cost in dollars
  double energy_joules = 0.0;  // E = sum over calls of 2 * N_params * tokens * (TDP / peak FLOP/s)
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
};

// The parts of an episode that reward terms read. Environments fill what their terms need.
struct RewardInput {
  std::string question;
  std::string response;        // the policy's own output (CogER: the router's output with its tag)
  std::string final_response;  // the text the answer is read from; `response` when empty
  std::string reference;       // gold answer or reference solution
  std::optional<AnswerFormat> format;  // the dataset's; the accuracy term's default when unset

  // CogER hierarchy: per-level outcomes (index 0 is L1) for the outcome oracle, or L_min given
  // by the dataset.
  std::vector<bool> level_correct;
  std::optional<int> min_level;

  // PRM: the reasoning steps so far (RLoT: the chain after each action).
  std::vector<std::string> steps;

  // DeepTool: the expert's step k (think + action) and whether it is the terminal answer step.
  std::string reference_step;

  CostUsage usage;

  const std::string& answer_text() const {
    return final_response.empty() ? response : final_response;
  }
};

class RewardTerm {
 public:
  virtual ~RewardTerm() = default;
  // The name under which the value is reported ("format", "accuracy", ...).
  virtual std::string name() const = 0;
  // The unweighted value. Errors are for failures to compute (an endpoint down, a malformed
  // PRM reply), never for a bad policy output, which scores low instead.
  virtual Result<double> Compute(const RewardInput& input) const = 0;
};

// Each term's unweighted value, its weight, and the weighted total.
struct RewardBreakdown {
  std::map<std::string, double> values;
  std::map<std::string, double> weights;
  double total = 0.0;

  std::string ToString() const;  // "total=1.8 accuracy=1 format=1 hierarchy=-0.2"
};

}  // namespace allot::rewards
