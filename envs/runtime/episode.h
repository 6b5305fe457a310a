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
#include <future>
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
  std::string served_model;   // the reply's "model": the model or adapter that sampled
  bool truncated() const { return finish_reason == "length"; }
};

// The adapter version that really sampled a policy turn, from the reply's "model" (allot
// serve reports the adapter its engine ran; vLLM the served LoRA name). Adapters are published
// under versioned names, "<prefix>-v<N>" (trainer/grpo/adapter_publisher.h):
//  - no adapter requested, or a reply that names no model: `requested_version`;
//  - the reply names the requested adapter: `requested_version`;
//  - it names another version of the same prefix: that version;
//  - it names anything else (the base model, another adapter): 0, unknown.
uint64_t ServedPolicyVersion(const std::string& requested_model, uint64_t requested_version,
                             const std::string& served_model);

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
  // and is accounted like every other call. An endpoint with `api: chat` gets the prompt as
  // one user message on /v1/chat/completions (its server applies the chat template).
  Result<Turn> CompleteText(std::string_view endpoint, const std::string& prompt,
                            const GenerateOptions& options);

  // Counts a tool call; kResourceExhausted when it would exceed max_tool_calls.
  Status BeginToolCall();

  // Accounts a call the env made to an endpoint outside this runtime (a PRM's /pooling, an
  // oracle's own episode), so that the trajectory's per-endpoint usage holds every call.
  void Account(const llm::CallRecord& record) { usage_.Add(record); }
  void Account(const llm::UsageReport& report) { usage_.Merge(report); }

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
  Result<llm::Completion> Await(std::string_view endpoint, std::future<Result<llm::Completion>> f);
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
