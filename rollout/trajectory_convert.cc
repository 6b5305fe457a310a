#include "rollout/trajectory_convert.h"

#include <algorithm>
#include <string>
#include <utility>

namespace allot::rollout {
namespace {

namespace rt = envs::runtime;

constexpr size_t kMaxInfoEntries = 64;
constexpr size_t kMaxInfoKeyBytes = 128;
constexpr size_t kMaxInfoValueBytes = 4096;
constexpr size_t kMaxFailureBytes = 4096;
constexpr size_t kMaxEndpoints = 256;

std::string Cut(const std::string& s, size_t max) {
  if (s.size() <= max) return s;
  return s.substr(0, max - 3) + "...";
}

}  // namespace

v1::SegmentRole ToProto(rt::SegmentRole role) {
  switch (role) {
    case rt::SegmentRole::kPrompt:
      return v1::SEGMENT_ROLE_PROMPT;
    case rt::SegmentRole::kPolicy:
      return v1::SEGMENT_ROLE_POLICY;
    // The protocol's TOOL role covers "tool results, retrieved passages, other models'
    // outputs spliced in".
    case rt::SegmentRole::kTool:
    case rt::SegmentRole::kOtherModel:
      return v1::SEGMENT_ROLE_TOOL;
    case rt::SegmentRole::kEnv:
      return v1::SEGMENT_ROLE_ENV;
  }
  return v1::SEGMENT_ROLE_UNSPECIFIED;
}

v1::FailureReason ToProto(rt::FailureReason reason) {
  switch (reason) {
    case rt::FailureReason::kNone:
      return v1::FAILURE_REASON_NONE;
    case rt::FailureReason::kEndpointError:
      return v1::FAILURE_REASON_ENDPOINT_ERROR;
    case rt::FailureReason::kTimeout:
      return v1::FAILURE_REASON_TIMEOUT;
    case rt::FailureReason::kToolError:
      return v1::FAILURE_REASON_TOOL_ERROR;
    case rt::FailureReason::kFormatError:
      return v1::FAILURE_REASON_FORMAT_ERROR;
    case rt::FailureReason::kEnvError:
      return v1::FAILURE_REASON_ENV_ERROR;
    case rt::FailureReason::kCancelled:
      return v1::FAILURE_REASON_CANCELLED;
  }
  return v1::FAILURE_REASON_ENV_ERROR;
}

rt::FailureReason FromProto(v1::FailureReason reason) {
  switch (reason) {
    case v1::FAILURE_REASON_NONE:
      return rt::FailureReason::kNone;
    case v1::FAILURE_REASON_ENDPOINT_ERROR:
      return rt::FailureReason::kEndpointError;
    case v1::FAILURE_REASON_TIMEOUT:
      return rt::FailureReason::kTimeout;
    case v1::FAILURE_REASON_TOOL_ERROR:
      return rt::FailureReason::kToolError;
    case v1::FAILURE_REASON_FORMAT_ERROR:
      return rt::FailureReason::kFormatError;
    case v1::FAILURE_REASON_CANCELLED:
      return rt::FailureReason::kCancelled;
    default:
      return rt::FailureReason::kEnvError;
  }
}

v1::Trajectory ToProto(const rt::Trajectory& t) {
  v1::Trajectory out;
  out.set_policy_version(t.policy_version);
  out.mutable_segments()->Reserve(static_cast<int>(t.segments.size()));
  for (const rt::Segment& s : t.segments) {
    v1::TokenSegment* seg = out.add_segments();
    seg->set_role(ToProto(s.role));
    seg->set_trainable(s.trainable);
    seg->mutable_ids()->Reserve(static_cast<int>(s.ids.size()));
    // Negative or huge ids become >= 2^31 and fail validation instead of wrapping silently.
    for (int64_t id : s.ids) {
      seg->add_ids(id < 0 || id > 0x7fffffff ? 0xffffffffu : static_cast<uint32_t>(id));
    }
    seg->mutable_logprobs()->Add(s.logprobs.begin(), s.logprobs.end());
    seg->set_source(s.source);
    seg->set_policy_version(s.policy_version);
    seg->set_step(s.step);
    seg->set_max_tokens(static_cast<uint32_t>(std::clamp<int64_t>(s.max_tokens, 0, 0xffffffff)));
  }
  for (const rt::Transition& tr : t.transitions) {
    v1::Transition* o = out.add_transitions();
    o->mutable_state()->Add(tr.state.begin(), tr.state.end());
    o->set_action(tr.action);
    o->set_reward(tr.reward);
    o->mutable_next_state()->Add(tr.next_state.begin(), tr.next_state.end());
    o->set_done(tr.done);
    o->set_num_actions(tr.num_actions);
  }
  for (const auto& [name, value] : t.rewards) {
    v1::RewardComponent* r = out.add_rewards();
    r->set_name(name);
    r->set_value(value);
  }
  out.set_reward(t.reward);
  out.mutable_step_rewards()->Add(t.step_rewards.begin(), t.step_rewards.end());
  v1::Accounting* a = out.mutable_accounting();
  const llm::UsageTotals& total = t.usage.total;
  a->set_prompt_tokens(static_cast<uint64_t>(total.prompt_tokens));
  a->set_completion_tokens(static_cast<uint64_t>(total.completion_tokens));
  a->set_cost_usd(total.cost_usd);
  a->set_energy_joules(total.energy_j);
  a->set_latency_ms(t.latency_ms);
  a->set_llm_calls(static_cast<uint32_t>(total.calls));
  a->set_tool_calls(t.tool_calls);
  for (const auto& [name, u] : t.usage.by_endpoint) {
    if (static_cast<size_t>(a->endpoints_size()) >= kMaxEndpoints) break;
    v1::EndpointUsage* e = a->add_endpoints();
    e->set_endpoint(name);
    e->set_calls(static_cast<uint32_t>(u.calls));
    e->set_prompt_tokens(static_cast<uint64_t>(u.prompt_tokens));
    e->set_completion_tokens(static_cast<uint64_t>(u.completion_tokens));
    e->set_cost_usd(u.cost_usd);
    e->set_energy_joules(u.energy_j);
    e->set_latency_ms(u.latency_s * 1000.0);
  }
  out.mutable_failure()->set_reason(ToProto(t.failure.reason));
  out.mutable_failure()->set_message(Cut(t.failure.message, kMaxFailureBytes));
  auto* info = out.mutable_info();
  for (const auto& [k, v] : t.info) {
    if (info->size() >= static_cast<int>(kMaxInfoEntries)) break;
    (*info)[Cut(k, kMaxInfoKeyBytes)] = Cut(v, kMaxInfoValueBytes);
  }
  return out;
}

rt::Trajectory FromProto(const v1::Trajectory& t) {
  rt::Trajectory out;
  out.policy_version = t.policy_version();
  for (const v1::TokenSegment& s : t.segments()) {
    rt::Segment seg;
    switch (s.role()) {
      case v1::SEGMENT_ROLE_POLICY:
        seg.role = rt::SegmentRole::kPolicy;
        break;
      case v1::SEGMENT_ROLE_TOOL:
        seg.role = rt::SegmentRole::kTool;
        break;
      case v1::SEGMENT_ROLE_ENV:
        seg.role = rt::SegmentRole::kEnv;
        break;
      default:
        seg.role = rt::SegmentRole::kPrompt;
        break;
    }
    seg.trainable = s.trainable();
    seg.ids.assign(s.ids().begin(), s.ids().end());
    seg.logprobs.assign(s.logprobs().begin(), s.logprobs().end());
    seg.policy_version = s.policy_version();
    seg.step = s.step();
    seg.max_tokens = s.max_tokens();
    seg.source = s.source();
    out.segments.push_back(std::move(seg));
  }
  for (const v1::Transition& tr : t.transitions()) {
    rt::Transition o;
    o.state.assign(tr.state().begin(), tr.state().end());
    o.action = tr.action();
    o.reward = tr.reward();
    o.next_state.assign(tr.next_state().begin(), tr.next_state().end());
    o.done = tr.done();
    o.num_actions = tr.num_actions();
    out.transitions.push_back(std::move(o));
  }
  for (const v1::RewardComponent& r : t.rewards()) out.rewards.emplace_back(r.name(), r.value());
  out.reward = t.reward();
  out.step_rewards.assign(t.step_rewards().begin(), t.step_rewards().end());
  const v1::Accounting& a = t.accounting();
  for (const v1::EndpointUsage& e : a.endpoints()) {
    llm::UsageTotals& u = out.usage.by_endpoint[e.endpoint()];
    u.calls = e.calls();
    u.prompt_tokens = static_cast<int64_t>(e.prompt_tokens());
    u.completion_tokens = static_cast<int64_t>(e.completion_tokens());
    u.cost_usd = e.cost_usd();
    u.energy_j = e.energy_joules();
    u.latency_s = e.latency_ms() / 1000.0;
  }
  out.usage.total.calls = a.llm_calls();
  out.usage.total.prompt_tokens = static_cast<int64_t>(a.prompt_tokens());
  out.usage.total.completion_tokens = static_cast<int64_t>(a.completion_tokens());
  out.usage.total.cost_usd = a.cost_usd();
  out.usage.total.energy_j = a.energy_joules();
  out.tool_calls = a.tool_calls();
  out.latency_ms = a.latency_ms();
  out.failure.reason = FromProto(t.failure().reason());
  out.failure.message = t.failure().message();
  for (const auto& [k, v] : t.info()) out.info[k] = v;
  return out;
}

v1::PolicyKind ToProto(rt::PolicySnapshot::Kind kind) {
  switch (kind) {
    case rt::PolicySnapshot::Kind::kQnetWeights:
      return v1::POLICY_KIND_QNET_WEIGHTS;
    case rt::PolicySnapshot::Kind::kLoraAdapter:
      return v1::POLICY_KIND_LORA_ADAPTER;
    case rt::PolicySnapshot::Kind::kNone:
      break;
  }
  return v1::POLICY_KIND_UNSPECIFIED;
}

rt::PolicySnapshot::Kind FromProto(v1::PolicyKind kind) {
  switch (kind) {
    case v1::POLICY_KIND_QNET_WEIGHTS:
      return rt::PolicySnapshot::Kind::kQnetWeights;
    case v1::POLICY_KIND_LORA_ADAPTER:
      return rt::PolicySnapshot::Kind::kLoraAdapter;
    default:
      return rt::PolicySnapshot::Kind::kNone;
  }
}

rt::EpisodeInput ToEpisodeInput(const v1::EpisodeRequest& r) {
  rt::EpisodeInput in;
  in.episode_id = r.episode_id();
  in.dataset_item = r.dataset_item();
  in.seed = r.seed();
  in.group_id = r.group_id();
  in.group_index = r.group_index();
  in.group_size = r.group_size();
  const v1::Sampling& s = r.sampling();
  in.sampling.temperature = s.temperature();
  in.sampling.top_p = s.top_p();
  in.sampling.top_k = s.top_k();
  in.sampling.max_tokens = s.max_tokens();
  in.sampling.seed = s.seed();
  in.sampling.stop.assign(s.stop().begin(), s.stop().end());
  if (r.has_epsilon()) in.sampling.epsilon = r.epsilon();  // a Q-net navigator's exploration
  return in;
}

}  // namespace allot::rollout
