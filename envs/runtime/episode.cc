#include "envs/runtime/episode.h"

#include <algorithm>
#include <future>
#include <utility>

#include "llm/client.h"

namespace allot::envs::runtime {
namespace {

using Clock = std::chrono::steady_clock;

// How often a blocking call looks at the cancellation flag.
constexpr auto kPollInterval = std::chrono::milliseconds(20);

double SecondsUntil(Clock::time_point t) {
  if (t == Clock::time_point::max()) return 0.0;
  return std::max(1e-3, std::chrono::duration<double>(t - Clock::now()).count());
}

}  // namespace

uint64_t ServedPolicyVersion(const std::string& requested, uint64_t requested_version,
                             const std::string& served) {
  if (requested.empty() || served.empty() || served == requested) return requested_version;
  // "<prefix>-v<N>": the same prefix with other digits is another version of one policy.
  auto split = [](const std::string& name, std::string* prefix, uint64_t* version) {
    const size_t v = name.rfind("-v");
    if (v == std::string::npos || v + 2 >= name.size() || name.size() - v - 2 > 19) return false;
    uint64_t n = 0;
    for (size_t i = v + 2; i < name.size(); ++i) {
      if (name[i] < '0' || name[i] > '9') return false;
      n = n * 10 + static_cast<uint64_t>(name[i] - '0');
    }
    *prefix = name.substr(0, v);
    *version = n;
    return true;
  };
  std::string want_prefix, got_prefix;
  uint64_t want = 0, got = 0;
  if (split(requested, &want_prefix, &want) && split(served, &got_prefix, &got) &&
      want_prefix == got_prefix) {
    return got;
  }
  return 0;  // another model sampled: its version is unknown
}

Episode::Episode(llm::Client* client, const EpisodeLimits& limits, const EpisodeInput& input)
    : client_(client), limits_(limits), input_(input), started_(Clock::now()) {
  deadline_ = input.deadline;
  if (limits.deadline_s > 0) {
    const auto own = started_ + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(limits.deadline_s));
    deadline_ = std::min(deadline_, own);
  }
}

Status Episode::Check() const {
  if (input_.Cancelled()) return Cancelled("episode cancelled");
  if (Clock::now() >= deadline_) return DeadlineExceeded("episode deadline passed");
  return Status::Ok();
}

Result<llm::Completion> Episode::Call(std::string_view endpoint,
                                      const llm::CompletionRequest& req) {
  if (client_ == nullptr) return Internal("episode runtime: no LLM client");
  llm::CallOptions options;
  options.deadline_s = SecondsUntil(deadline_);
  return Await(endpoint, client_->Complete(endpoint, req, options));
}

Result<llm::Completion> Episode::Await(std::string_view endpoint,
                                       std::future<Result<llm::Completion>> f) {
  // The call keeps running in the client when the episode is cancelled; its result is dropped.
  while (f.wait_for(kPollInterval) != std::future_status::ready) {
    if (input_.Cancelled())
      return Cancelled("episode cancelled during a call to '" + std::string(endpoint) + "'");
  }
  Result<llm::Completion> r = f.get();
  if (!r.ok()) {
    llm::CallRecord failed;
    failed.endpoint = std::string(endpoint);
    failed.ok = false;
    usage_.Add(failed);
    const StatusCode code = r.status().code();
    const std::string msg = "endpoint '" + std::string(endpoint) + "': " + r.status().ToString();
    if (code == StatusCode::kCancelled) return Cancelled(msg);
    if (code == StatusCode::kDeadlineExceeded && Clock::now() >= deadline_) {
      return DeadlineExceeded(msg);
    }
    return Unavailable(msg);  // every other call failure is the endpoint's
  }
  usage_.Add(r->record);
  if (r->choices.empty()) {
    return DataLoss("endpoint '" + std::string(endpoint) + "': reply has no choices");
  }
  return r;
}

Status Episode::BeginTurn(size_t prompt_ids, int64_t* max_tokens, int64_t wanted) {
  ALLOT_RETURN_IF_ERROR(Check());
  if (turns_ >= limits_.max_turns) {
    return ResourceExhausted("turn limit reached (max_turns " + std::to_string(limits_.max_turns) +
                             ")");
  }
  const int64_t left = limits_.max_total_tokens - tokens_ - static_cast<int64_t>(prompt_ids);
  if (left <= 0) {
    return ResourceExhausted("token limit reached (max_total_tokens " +
                             std::to_string(limits_.max_total_tokens) + ")");
  }
  *max_tokens = std::min(left, wanted > 0 ? wanted : limits_.max_turn_tokens);
  ++turns_;
  return Status::Ok();
}

Status Episode::AppendText(Conversation& conv, SegmentRole role, const std::string& text,
                           uint32_t step, const std::string& source) {
  ALLOT_RETURN_IF_ERROR(Check());
  if (role == SegmentRole::kPolicy) {
    return InvalidArgument("AppendText: policy segments come from the endpoint, not from text");
  }
  if (text.empty()) return Status::Ok();
  if (client_ == nullptr) return Internal("episode runtime: no LLM client");
  // Special tokens of the model's template are written as text in our templates; the
  // tokenizer maps them, and never adds a BOS of its own in the middle of a conversation.
  std::future<Result<std::vector<int64_t>>> f =
      client_->Tokenize(conv.endpoint(), text, /*add_special_tokens=*/conv.num_ids() == 0);
  while (f.wait_for(kPollInterval) != std::future_status::ready) {
    if (input_.Cancelled()) return Cancelled("episode cancelled while tokenizing");
  }
  Result<std::vector<int64_t>> ids = f.get();
  if (!ids.ok()) return ids.status().Annotate("tokenizing with '" + conv.endpoint() + "'");
  Segment s;
  s.role = role;
  s.trainable = false;
  s.ids = std::move(ids).value();
  s.step = step;
  s.source = source.empty() ? conv.endpoint() : source;
  conv.Append(std::move(s));
  return Status::Ok();
}

namespace {

void FillParams(const GenerateOptions& o, int64_t max_tokens, llm::SamplingParams& p) {
  p.max_tokens = static_cast<int>(max_tokens);
  p.temperature = o.temperature;
  p.top_p = o.top_p;
  if (o.top_k) p.top_k = static_cast<int>(*o.top_k);
  p.seed = o.seed;
  p.stop = o.stop;
  // The stop string is part of what was sampled: keep it, so that the ids are complete.
  if (!o.stop.empty()) p.include_stop_str_in_output = true;
}

Turn TurnOf(llm::Choice& c) {
  Turn t;
  t.text = std::move(c.text);
  t.finish_reason = std::move(c.finish_reason);
  t.stop_reason = std::move(c.stop_reason);
  return t;
}

}  // namespace

Result<Turn> Episode::Generate(Conversation& conv, const GenerateOptions& o) {
  if (conv.num_ids() == 0) return InvalidArgument("Generate: the conversation is empty");
  int64_t max_tokens = 0;
  ALLOT_RETURN_IF_ERROR(BeginTurn(conv.num_ids(), &max_tokens, o.max_tokens));
  llm::CompletionRequest req;
  req.model = o.model;
  req.prompt_token_ids = conv.ids();
  FillParams(o, max_tokens, req.params);
  req.params.return_token_ids = true;
  req.params.skip_special_tokens = false;
  const bool policy = o.role == SegmentRole::kPolicy;
  if (policy) req.params.logprobs = 1;
  ALLOT_ASSIGN_OR_RETURN(llm::Completion c, Call(conv.endpoint(), req));
  llm::Choice& choice = c.choices[0];
  // The endpoint by name and URL: a reply it cannot train on names the server to fix.
  const llm::EndpointConfig* endpoint = client_->endpoint(conv.endpoint());
  const std::string where = "endpoint '" + conv.endpoint() + "'" +
                            (endpoint != nullptr ? " (" + endpoint->base_url + ")" : "");
  if (choice.token_ids.empty() && !choice.text.empty()) {
    // Re-encoding the text would not give back what was sampled: refuse.
    return DataLoss(where + ": the reply carries no token ids (return_token_ids)");
  }
  Segment s;
  s.role = o.role;
  s.trainable = policy;
  s.ids = choice.token_ids;
  s.step = o.step;
  s.source = conv.endpoint();
  if (policy) {
    if (choice.logprobs.size() != choice.token_ids.size()) {
      return DataLoss(where + ": " + std::to_string(choice.logprobs.size()) + " log-probs for " +
                      std::to_string(choice.token_ids.size()) + " sampled ids");
    }
    s.logprobs.reserve(choice.logprobs.size());
    for (const llm::TokenLogprob& lp : choice.logprobs) {
      s.logprobs.push_back(static_cast<float>(std::min(0.0, lp.logprob)));
    }
    s.policy_version = ServedPolicyVersion(o.model, o.policy_version, c.model);
    s.max_tokens = max_tokens;  // the turn's own budget (the learner's overlong shaping)
  }
  tokens_ += static_cast<int64_t>(conv.num_ids() + s.ids.size());
  Turn t = TurnOf(choice);
  t.served_model = c.model;
  t.ids = s.ids;
  t.logprobs = s.logprobs;
  conv.Append(std::move(s));
  return t;
}

Result<Turn> Episode::CompleteText(std::string_view endpoint, const std::string& prompt,
                                   const GenerateOptions& o) {
  int64_t max_tokens = 0;
  ALLOT_RETURN_IF_ERROR(BeginTurn(0, &max_tokens, o.max_tokens));
  if (client_ == nullptr) return Internal("episode runtime: no LLM client");
  const llm::EndpointConfig* ep = client_->endpoint(endpoint);
  llm::Completion c;
  if (ep != nullptr && ep->api == "chat") {
    llm::ChatRequest req;
    req.model = o.model;
    req.messages.push_back({"user", prompt});
    FillParams(o, max_tokens, req.params);
    llm::CallOptions options;
    options.deadline_s = SecondsUntil(deadline_);
    ALLOT_ASSIGN_OR_RETURN(c, Await(endpoint, client_->Chat(endpoint, req, options)));
  } else {
    llm::CompletionRequest req;
    req.model = o.model;
    req.prompt = prompt;
    FillParams(o, max_tokens, req.params);
    ALLOT_ASSIGN_OR_RETURN(c, Call(endpoint, req));
  }
  tokens_ += c.record.prompt_tokens + c.record.completion_tokens;
  llm::Choice& choice = c.choices[0];
  Turn t = TurnOf(choice);
  t.served_model = c.model;
  t.ids = std::move(choice.token_ids);
  return t;
}

Status Episode::BeginToolCall() {
  ALLOT_RETURN_IF_ERROR(Check());
  if (tool_calls_ >= limits_.max_tool_calls) {
    return ResourceExhausted("tool-call limit reached (max_tool_calls " +
                             std::to_string(limits_.max_tool_calls) + ")");
  }
  ++tool_calls_;
  return Status::Ok();
}

Failure Episode::FailureFrom(const Status& s, FailureReason otherwise) {
  Failure f;
  if (s.ok()) return f;
  f.message = s.ToString();
  switch (s.code()) {
    case StatusCode::kCancelled:
      f.reason = FailureReason::kCancelled;
      break;
    case StatusCode::kDeadlineExceeded:
      f.reason = FailureReason::kTimeout;
      break;
    case StatusCode::kUnavailable:
    case StatusCode::kPermissionDenied:
    case StatusCode::kDataLoss:
    case StatusCode::kNotFound:
      f.reason = FailureReason::kEndpointError;
      break;
    case StatusCode::kResourceExhausted:
      f.reason = FailureReason::kFormatError;
      break;
    default:
      f.reason = otherwise;
      break;
  }
  if (f.message.size() > 4000) f.message.resize(4000);
  return f;
}

void Episode::Finish(Trajectory& t) const {
  t.usage.Merge(usage_);
  t.tool_calls = static_cast<uint32_t>(tool_calls_);
  t.latency_ms = std::chrono::duration<double, std::milli>(Clock::now() - started_).count();
  if (t.policy_version == 0) t.policy_version = input_.policy_version();
}

}  // namespace allot::envs::runtime
