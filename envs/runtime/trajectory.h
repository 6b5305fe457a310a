// The trajectory contract in plain C++: what every env returns, in-process (allot eval,
// single-process training) or inside a rollout worker, which converts it to the wire message
// (rollout/trajectory_convert.h). Envs never build gRPC messages.
//
// Tokens in, tokens out: concatenated, the segments of one conversation are exactly the ids the
// policy endpoint sampled plus the ids the env inserted, never decoded and re-encoded text.
// Only POLICY segments carry loss; prompts, tool results and other models' output are masked.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "llm/accounting.h"

namespace allot::envs::runtime {

// Who produced the tokens of a segment (mirrors allot.v1.SegmentRole).
enum class SegmentRole {
  kPrompt,      // prompt or system text fed to the policy: masked
  kPolicy,      // sampled by the trained policy: trainable
  kTool,        // a tool's result spliced into the context: masked
  kEnv,         // other env-inserted text (templates, separators): masked
  kOtherModel,  // another model's output spliced into the policy's context: masked
};

const char* SegmentRoleName(SegmentRole role);

struct Segment {
  SegmentRole role = SegmentRole::kPrompt;
  bool trainable = false;       // true only for kPolicy (an env may mask truncated turns)
  std::vector<int64_t> ids;     // in the vocabulary of the conversation's endpoint
  std::vector<float> logprobs;  // one per id for policy segments; empty otherwise
  uint64_t policy_version = 0;  // adapter version that sampled a policy segment; 0 = unknown
  uint32_t step = 0;            // 1-based step (turn, tool call, block); 0 = no steps
  int64_t max_tokens = 0;       // a policy turn's generation budget; 0 = unknown
  std::string source;           // the endpoint or tool that produced it
};

// One DQN navigator step (s, a, r, s', done).
struct Transition {
  std::vector<float> state;
  uint32_t action = 0;
  float reward = 0.0f;
  std::vector<float> next_state;
  bool done = false;
  uint32_t num_actions = 0;
};

// Why an episode ended early (mirrors allot.v1.FailureReason).
enum class FailureReason {
  kNone,
  kEndpointError,  // an LLM endpoint failed after retries
  kTimeout,        // the episode's deadline passed
  kToolError,      // a tool failed in a way the env treats as fatal
  kFormatError,    // malformed or runaway output, or a limit the output ran into
  kEnvError,       // bad dataset item, bad config, internal error
  kCancelled,      // cancelled by the caller
};

const char* FailureReasonName(FailureReason reason);

struct Failure {
  FailureReason reason = FailureReason::kNone;
  std::string message;
  bool failed() const { return reason != FailureReason::kNone; }
};

struct Trajectory {
  uint64_t policy_version = 0;  // the snapshot the episode ran under
  std::vector<Segment> segments;
  std::vector<Transition> transitions;
  // Every reward term by name, in the order the env computed them; names unique.
  std::vector<std::pair<std::string, double>> rewards;
  double reward = 0.0;  // the env's combined scalar
  // step_rewards[i] belongs to the segments whose step is i + 1; empty = outcome only.
  std::vector<double> step_rewards;
  Failure failure;
  std::map<std::string, std::string> info;  // small facts for logs (at most 64 of 4 KiB)
  llm::UsageReport usage;                   // every LLM call of the episode, per endpoint
  uint32_t tool_calls = 0;
  double latency_ms = 0.0;  // wall time of the episode; 0 = let the host measure it

  // The concatenated ids of all segments, in order.
  std::vector<int64_t> AllIds() const;
  // Sets or replaces a reward component.
  void SetReward(const std::string& name, double value);
};

}  // namespace allot::envs::runtime
