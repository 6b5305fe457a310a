#include "rollout/validate.h"

#include <cmath>
#include <limits>
#include <set>
#include <string_view>

namespace allot::rollout {
namespace {

Status TooLong(const std::string& field, size_t size, size_t limit) {
  return InvalidArgument(field + ": " + std::to_string(size) + " bytes exceeds the limit of " +
                         std::to_string(limit));
}

bool Finite(double x) { return std::isfinite(x); }

}  // namespace

std::string Truncated(const std::string& s, size_t n) {
  std::string out = s.substr(0, n);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
  }
  return out;
}

Status ValidateEpisodeId(const std::string& id, const char* field) {
  if (id.empty()) return InvalidArgument(std::string(field) + ": empty");
  if (id.size() > kMaxIdBytes) return TooLong(field, id.size(), kMaxIdBytes);
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == ':' || c == '-';
    if (!ok) {
      return InvalidArgument(std::string(field) + " '" + Truncated(id) +
                             "': only [A-Za-z0-9._:-] allowed");
    }
  }
  return Status::Ok();
}

Status ValidateEpisodeRequest(const v1::EpisodeRequest& r) {
  ALLOT_RETURN_IF_ERROR(ValidateEpisodeId(r.episode_id()));
  const std::string where = "episode " + r.episode_id() + ": ";
  if (r.env().empty()) return InvalidArgument(where + "env: empty");
  if (r.env().size() > kMaxEnvNameBytes)
    return TooLong(where + "env", r.env().size(), kMaxEnvNameBytes);
  if (r.env_config().size() > kMaxEnvConfigBytes) {
    return TooLong(where + "env_config", r.env_config().size(), kMaxEnvConfigBytes);
  }
  if (r.dataset_item().size() > kMaxDatasetItemBytes) {
    return TooLong(where + "dataset_item", r.dataset_item().size(), kMaxDatasetItemBytes);
  }
  const v1::Sampling& s = r.sampling();
  if (!Finite(s.temperature()) || s.temperature() < 0 || s.temperature() > 10) {
    return InvalidArgument(where + "sampling.temperature: must lie in [0, 10]");
  }
  if (!Finite(s.top_p()) || s.top_p() < 0 || s.top_p() > 1) {
    return InvalidArgument(where + "sampling.top_p: must lie in [0, 1]");
  }
  if (s.top_k() > 1000000) return InvalidArgument(where + "sampling.top_k: at most 1000000");
  if (s.max_tokens() > (1u << 20))
    return InvalidArgument(where + "sampling.max_tokens: at most 1048576");
  if (s.stop_size() > 16) return InvalidArgument(where + "sampling.stop: at most 16 strings");
  for (const auto& stop : s.stop()) {
    if (stop.size() > 256) return TooLong(where + "sampling.stop[]", stop.size(), 256);
  }
  if (r.group_id().empty()) {
    if (r.group_size() != 0 || r.group_index() != 0) {
      return InvalidArgument(where + "group_size/group_index set without group_id");
    }
  } else {
    ALLOT_RETURN_IF_ERROR(ValidateEpisodeId(r.group_id(), "group_id"));
    if (r.group_size() < 1 || r.group_size() > kMaxGroupSize) {
      return InvalidArgument(where + "group_size: must lie in [1, 4096]");
    }
    if (r.group_index() >= r.group_size()) {
      return InvalidArgument(where + "group_index " + std::to_string(r.group_index()) +
                             " >= group_size " + std::to_string(r.group_size()));
    }
  }
  if (r.timeout_ms() > kMaxTimeoutMs) return InvalidArgument(where + "timeout_ms: at most 24 h");
  if (r.attempt() > kMaxAttempt) return InvalidArgument(where + "attempt: at most 1000");
  return Status::Ok();
}

Status ValidateLearnerMessage(const v1::LearnerMessage& m) {
  if (m.episodes_size() > kMaxEpisodesPerMessage) {
    return InvalidArgument("episodes: " + std::to_string(m.episodes_size()) +
                           " per message exceeds 4096");
  }
  if (m.acks_size() > kMaxAcksPerMessage)
    return InvalidArgument("acks: more than 65536 per message");
  if (m.cancel_size() > kMaxEpisodesPerMessage) {
    return InvalidArgument("cancel: more than 4096 per message");
  }
  for (const auto& id : m.acks()) ALLOT_RETURN_IF_ERROR(ValidateEpisodeId(id, "acks[]"));
  for (const auto& id : m.cancel()) ALLOT_RETURN_IF_ERROR(ValidateEpisodeId(id, "cancel[]"));
  return Status::Ok();
}

Status ValidatePolicyChunk(const v1::PolicyChunk& c, int64_t max_policy_bytes,
                           int64_t chunk_limit) {
  if (c.version() < 1) return InvalidArgument("policy.version: must be >= 1");
  if (!v1::PolicyKind_IsValid(c.kind()) || c.kind() == v1::POLICY_KIND_UNSPECIFIED) {
    return InvalidArgument("policy.kind: unknown value " + std::to_string(c.kind()));
  }
  if (c.count() < 1 || c.count() > kMaxChunks) {
    return InvalidArgument("policy.count: must lie in [1, 65536]");
  }
  if (c.index() >= c.count()) return InvalidArgument("policy.index: must be < count");
  if (c.total_bytes() > static_cast<uint64_t>(max_policy_bytes)) {
    return InvalidArgument("policy.total_bytes: " + std::to_string(c.total_bytes()) +
                           " exceeds max_policy_bytes " + std::to_string(max_policy_bytes));
  }
  if (static_cast<int64_t>(c.data().size()) > chunk_limit) {
    return TooLong("policy.data", c.data().size(), static_cast<size_t>(chunk_limit));
  }
  if (c.data().size() > c.total_bytes())
    return InvalidArgument("policy.data: larger than total_bytes");
  if (c.sha256().size() != 32) return InvalidArgument("policy.sha256: must be 32 bytes");
  if (c.adapter_name().size() > kMaxIdBytes)
    return TooLong("policy.adapter_name", c.adapter_name().size(), kMaxIdBytes);
  if (c.adapter_uri().size() > 4096)
    return TooLong("policy.adapter_uri", c.adapter_uri().size(), 4096);
  if (c.kind() == v1::POLICY_KIND_LORA_ADAPTER) {
    if (c.adapter_uri().empty())
      return InvalidArgument("policy.adapter_uri: empty for a LoRA adapter");
    if (c.total_bytes() != 0)
      return InvalidArgument("policy.total_bytes: a LoRA adapter carries no bytes");
  } else if (c.role_adapters_size() > 0) {
    return InvalidArgument("policy.role_adapters: only a LoRA adapter policy has role adapters");
  }
  if (c.role_adapters_size() > 16) {
    return InvalidArgument("policy.role_adapters: " + std::to_string(c.role_adapters_size()) +
                           " entries, at most 16");
  }
  for (const v1::RoleAdapter& r : c.role_adapters()) {
    if (r.role().empty() || r.role().size() > 64) {
      return InvalidArgument("policy.role_adapters.role: must be 1-64 bytes");
    }
    if (r.adapter_name().empty() || r.adapter_name().size() > kMaxIdBytes) {
      return InvalidArgument("policy.role_adapters[" + r.role() +
                             "].adapter_name: must be 1-128 bytes");
    }
    if (r.adapter_uri().size() > 4096) {
      return TooLong("policy.role_adapters.adapter_uri", r.adapter_uri().size(), 4096);
    }
  }
  return Status::Ok();
}

namespace {

// Branch-free scans that the compiler vectorizes (validate.cc is built with the dynamic
// vectorizer cost model), so that an 8k-token trajectory is checked at memory speed. Only when
// one fails does the caller look for the offending element to name it.
bool AllBelow2Pow31(const google::protobuf::RepeatedField<uint32_t>& v) {
  const uint32_t* p = v.data();
  const int n = v.size();
  uint32_t acc = 0;
  for (int i = 0; i < n; ++i) acc |= p[i];
  return (acc >> 31) == 0;
}

bool AllNonPositive(const google::protobuf::RepeatedField<float>& v) {
  const float* p = v.data();
  const int n = v.size();
  uint32_t bad = 0;
  for (int i = 0; i < n; ++i) bad |= !(p[i] <= 0.0f);  // NaN fails too
  return bad == 0;
}

bool AllFinite(const google::protobuf::RepeatedField<float>& v) {
  const float* p = v.data();
  const int n = v.size();
  uint32_t bad = 0;
  for (int i = 0; i < n; ++i) bad |= !(std::fabs(p[i]) <= std::numeric_limits<float>::max());
  return bad == 0;
}

bool AllFinite(const google::protobuf::RepeatedField<double>& v) {
  for (double x : v) {
    if (!(std::fabs(x) <= std::numeric_limits<double>::max())) return false;
  }
  return true;
}

}  // namespace

Status ValidateTrajectory(const v1::Trajectory& t) {
  ALLOT_RETURN_IF_ERROR(ValidateEpisodeId(t.episode_id(), "trajectory.episode_id"));
  // Error text is built only on failure: this runs for every trajectory on both sides.
  auto where = [&t] { return "trajectory " + t.episode_id() + ": "; };
  // Per-step rewards: step_rewards[i] belongs to the segments whose step is i + 1.
  const int n_steps = t.step_rewards_size();
  if (n_steps > 65536) return InvalidArgument(where() + "step_rewards: more than 65536");
  if (!AllFinite(t.step_rewards())) return InvalidArgument(where() + "step_rewards: not finite");
  for (int i = 0; i < t.segments_size(); ++i) {
    const v1::TokenSegment& s = t.segments(i);
    auto f = [&] { return where() + "segments[" + std::to_string(i) + "]"; };
    if (n_steps > 0 && s.step() > static_cast<uint32_t>(n_steps)) {
      return InvalidArgument(f() + ".step: " + std::to_string(s.step()) + " > " +
                             std::to_string(n_steps) + " step_rewards");
    }
    if (!v1::SegmentRole_IsValid(s.role()) || s.role() == v1::SEGMENT_ROLE_UNSPECIFIED) {
      return InvalidArgument(f() + ".role: unknown value " + std::to_string(s.role()));
    }
    if (s.trainable()) {
      if (s.logprobs_size() != s.ids_size()) {
        // The segment's source names the endpoint that sampled it (or "<role>@<endpoint>").
        return InvalidArgument(f() + ": " + std::to_string(s.logprobs_size()) + " logprobs for " +
                               std::to_string(s.ids_size()) +
                               " ids of a trainable segment sampled by '" + s.source() + "'");
      }
    } else if (s.logprobs_size() != 0 && s.logprobs_size() != s.ids_size()) {
      return InvalidArgument(f() + ".logprobs: must be empty or one per id");
    }
    if (!AllBelow2Pow31(s.ids())) {
      for (uint32_t id : s.ids()) {
        if (id >= (1u << 31))
          return InvalidArgument(f() + ".ids: id " + std::to_string(id) + " >= 2^31");
      }
    }
    if (!AllNonPositive(s.logprobs())) {
      return InvalidArgument(f() + ".logprobs: must be finite and <= 0");
    }
  }
  for (int i = 0; i < t.transitions_size(); ++i) {
    const v1::Transition& tr = t.transitions(i);
    auto f = [&] { return where() + "transitions[" + std::to_string(i) + "]"; };
    if (tr.num_actions() < 1 || tr.num_actions() > 65536) {
      return InvalidArgument(f() + ".num_actions: must lie in [1, 65536]");
    }
    if (tr.action() >= tr.num_actions())
      return InvalidArgument(f() + ".action: must be < num_actions");
    if (tr.state_size() == 0) return InvalidArgument(f() + ".state: empty");
    if (!(tr.done() && tr.next_state_size() == 0) && tr.next_state_size() != tr.state_size()) {
      return InvalidArgument(f() + ".next_state: size differs from state");
    }
    if (!Finite(tr.reward())) return InvalidArgument(f() + ".reward: not finite");
    if (!AllFinite(tr.state())) return InvalidArgument(f() + ".state: not finite");
    if (!AllFinite(tr.next_state())) return InvalidArgument(f() + ".next_state: not finite");
  }
  // Names are unique: pairwise for the usual handful of components, a set beyond that.
  const int n_rewards = t.rewards_size();
  std::set<std::string_view> names;
  for (int i = 0; i < n_rewards; ++i) {
    const v1::RewardComponent& r = t.rewards(i);
    if (r.name().empty() || r.name().size() > kMaxIdBytes) {
      return InvalidArgument(where() + "rewards[].name: must be 1-128 bytes");
    }
    bool duplicate = false;
    if (n_rewards <= 16) {
      for (int j = 0; j < i && !duplicate; ++j) duplicate = t.rewards(j).name() == r.name();
    } else {
      duplicate = !names.insert(r.name()).second;
    }
    if (duplicate) {
      return InvalidArgument(where() + "rewards: duplicate component '" + Truncated(r.name()) +
                             "'");
    }
    if (!Finite(r.value()))
      return InvalidArgument(where() + "rewards." + r.name() + ": not finite");
  }
  if (!Finite(t.reward())) return InvalidArgument(where() + "reward: not finite");
  const v1::Accounting& a = t.accounting();
  if (!Finite(a.cost_usd()) || a.cost_usd() < 0 || !Finite(a.energy_joules()) ||
      a.energy_joules() < 0 || !Finite(a.latency_ms()) || a.latency_ms() < 0) {
    return InvalidArgument(where() +
                           "accounting: cost, energy and latency must be finite and >= 0");
  }
  if (a.endpoints_size() > kMaxEndpoints)
    return InvalidArgument(where() + "accounting.endpoints: more than 256");
  if (!v1::FailureReason_IsValid(t.failure().reason())) {
    return InvalidArgument(where() + "failure.reason: unknown value " +
                           std::to_string(t.failure().reason()));
  }
  if (t.failure().message().size() > kMaxFailureMessageBytes) {
    return TooLong(where() + "failure.message", t.failure().message().size(),
                   kMaxFailureMessageBytes);
  }
  if (t.info_size() > static_cast<int>(kMaxInfoEntries))
    return InvalidArgument(where() + "info: more than 64 entries");
  for (const auto& [k, v] : t.info()) {
    if (k.size() > kMaxIdBytes || v.size() > kMaxInfoBytes) {
      return InvalidArgument(where() + "info['" + Truncated(k) + "']: too long");
    }
  }
  return Status::Ok();
}

Status ValidateTrajectoryChunk(const v1::TrajectoryChunk& c, int64_t max_trajectory_bytes) {
  ALLOT_RETURN_IF_ERROR(ValidateEpisodeId(c.episode_id(), "chunk.episode_id"));
  switch (c.body_case()) {
    case v1::TrajectoryChunk::kWhole:
      if (c.whole().episode_id() != c.episode_id()) {
        return InvalidArgument("chunk " + c.episode_id() +
                               ": trajectory carries another episode id");
      }
      return Status::Ok();
    case v1::TrajectoryChunk::kPart:
      if (c.count() < 2 || c.count() > kMaxChunks) {
        return InvalidArgument("chunk " + c.episode_id() + ".count: must lie in [2, 65536]");
      }
      if (c.index() >= c.count())
        return InvalidArgument("chunk " + c.episode_id() + ".index: must be < count");
      if (c.total_bytes() > static_cast<uint64_t>(max_trajectory_bytes)) {
        return InvalidArgument("chunk " + c.episode_id() + ".total_bytes: " +
                               std::to_string(c.total_bytes()) + " exceeds max_trajectory_bytes");
      }
      return Status::Ok();
    default:
      return InvalidArgument("chunk " + c.episode_id() + ": no body");
  }
}

}  // namespace allot::rollout
