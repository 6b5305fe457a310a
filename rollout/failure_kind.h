// Which failed episodes a learner still trains on, and the names failures are counted under.
//
// A policy failure is the policy's own doing: malformed or runaway output, a malformed call, a
// limit its output ran into (FAILURE_REASON_FORMAT_ERROR). Dropping those would leave the
// learner blind to what its choices lead to and bias it toward the choices that fail, so an
// env scores them (its failure reward: by default every reward term as for a wrong, malformed
// answer) and they reach the learner like any other episode:
//  - GRPO: the trajectory keeps its tokens and carries the env's reward terms; it stays in its
//    group, whose advantage penalises it;
//  - DQN: the transitions up to the failure are kept and the failing decision is the last one,
//    terminal, with the failure reward.
// Every other failure (endpoint down, timeout, worker lost, cancelled, stale, a bad dataset item
// or config) is not the policy's: the episode is retried or dropped, and counted by reason.
#pragma once

#include <algorithm>
#include <cctype>
#include <string>

#include "proto/allot/v1/rollout.pb.h"

namespace allot::rollout {

inline bool IsPolicyFailure(v1::FailureReason reason) {
  return reason == v1::FAILURE_REASON_FORMAT_ERROR;
}

// A failed GRPO episode its env scored: a policy failure with reward terms. One without (an
// env that does not score its failures, or DeepTool's format_errors: fail) is dropped.
inline bool IsScoredPolicyFailure(const v1::Trajectory& t) {
  return IsPolicyFailure(t.failure().reason()) && t.rewards_size() > 0;
}

// "format_error", "endpoint_error", ...: FailureReason's name without its prefix, lower case.
inline std::string FailureReasonLabel(v1::FailureReason reason) {
  std::string name = v1::FailureReason_Name(reason);
  const std::string prefix = "FAILURE_REASON_";
  if (name.rfind(prefix, 0) == 0) name = name.substr(prefix.size());
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return name.empty() ? "unknown" : name;
}

}  // namespace allot::rollout
