// Episode: the runtime one episode runs in. It talks to LLM endpoints tokens in and tokens out
// (llm::Client: token-id prompts, `return_token_ids` and log-probs), accounts every call per
// endpoint (tokens, cost, energy, latency, calls), enforces the limits (turns, tool calls,
// tokens, deadline) and cancellation, and maps failures to a FailureReason.
//
// Failures end the episode, never the host: every method returns a Status an env turns into
// the trajectory's failure with FailureFrom().
//
// Not thread-safe: one episode, one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "envs/runtime/conversation.h"
#include "envs/runtime/env.h"
#include "envs/runtime/limits.h"
#include "envs/runtime/trajectory.h"
#include "llm/accounting.h"
#include "llm/openai_types.h"

namespace allot::llm {
class Client;
}

namespace allot::envs::runtime {

struct GenerateOptions {
  SegmentRole role = SegmentRole::kPolicy;  // kPolicy: trainable, log-probs required
  std::string model;                        // empty = the endpoint's model (or an adapter)
  int64_t max_tokens = 0;                   // 0 = limits.max_turn_tokens
  std::optional<double> temperature;
  std::optional<double> top_p;
  std::optional<int64_t> top_k;
  std::optional<int64_t> seed;
  std::vector<std::string> stop;
  uint64_t policy_version = 0;  // recorded on a policy segment
  uint32_t step = 0;
};

// One generation call's result. The segment it appended holds the same ids.
struct Turn {
  std::string text;
  std::vector<int64_t> ids;
  std::vector<float> logprobs;
  std::string finish_reason;  // "stop", "length", ...
  std::string stop_reason;    // the stop string or id, when the server says
  bool truncated() const { return finish_reason == "length"; }
};

class Episode {
 public:
  Episode(llm::Client* client, const EpisodeLimits& limits, const EpisodeInput& input);

  // OK while the episode may go on; kCancelled or kDeadlineExceeded otherwise.
  Status Check() const;

  // Tokenizes `text` once with the conversation's endpoint and appends it as a masked segment.
  // The ids are never re-derived from text later.
  Status AppendText(Conversation& conv, SegmentRole role, const std::string& text,
                    uint32_t step = 0, const std::string& source = "");

  // One completion over the conversation's ids; the sampled ids (never re-tokenized) are
  // appended as a segment of options.role. Counts a turn.
  Result<Turn> Generate(Conversation& conv, const GenerateOptions& options);

  // A text-in, text-out call (another model whose tokens are not the policy's). Counts a turn
  // and is accounted like every other call.
  Result<Turn> CompleteText(std::string_view endpoint, const std::string& prompt,
                            const GenerateOptions& options);

  // Counts a tool call; kResourceExhausted when it would exceed max_tool_calls.
  Status BeginToolCall();

  int64_t turns() const { return turns_; }
  int64_t tool_calls() const { return tool_calls_; }
  int64_t tokens() const { return tokens_; }
  const llm::UsageReport& usage() const { return usage_; }
  const EpisodeLimits& limits() const { return limits_; }
  const EpisodeInput& input() const { return input_; }

  // The failure a status stands for (cancelled, deadline, endpoint, format, ...).
  static Failure FailureFrom(const Status& status, FailureReason otherwise);

  // Copies usage, tool calls and wall time into `t`; sets t.failure from `status` unless OK.
  void Finish(Trajectory& t) const;

 private:
  Result<llm::Completion> Call(std::string_view endpoint, const llm::CompletionRequest& req);
  Status BeginTurn(size_t prompt_ids, int64_t* max_tokens, int64_t wanted);

  llm::Client* client_;
  EpisodeLimits limits_;
  const EpisodeInput& input_;
  std::chrono::steady_clock::time_point started_;
  std::chrono::steady_clock::time_point deadline_;
  int64_t turns_ = 0;
  int64_t tool_calls_ = 0;
  int64_t tokens_ = 0;
  llm::UsageReport usage_;
};

}  // namespace allot::envs::runtime
