#include "trainer/grpo/alternation.h"

namespace allot::trainer::grpo {

std::string ActiveRole(const AlternationConfig& config, int64_t step) {
  if (!config.enabled || config.roles.empty()) return "";
  const int64_t k = config.switch_every > 0 ? config.switch_every : 1;
  const int64_t n = static_cast<int64_t>(config.roles.size());
  return config.roles[static_cast<size_t>((step / k) % n)];
}

double RoleLearningRate(const GrpoConfig& grpo, int64_t step, double scheduled) {
  const AlternationConfig& a = grpo.alternation;
  if (!a.enabled || a.lr.empty() || a.roles.empty() || grpo.lr <= 0.0) return scheduled;
  const int64_t k = a.switch_every > 0 ? a.switch_every : 1;
  const size_t i = static_cast<size_t>((step / k) % static_cast<int64_t>(a.roles.size()));
  if (i >= a.lr.size()) return scheduled;
  return scheduled * a.lr[i] / grpo.lr;
}

Status ValidateAlternation(const AlternationConfig& config) {
  if (!config.enabled) return Status::Ok();
  if (config.roles.empty()) return InvalidArgument("grpo.alternation.roles: empty");
  if (!config.lr.empty() && config.lr.size() != config.roles.size()) {
    return InvalidArgument("grpo.alternation.lr: " + std::to_string(config.lr.size()) +
                           " rates for " + std::to_string(config.roles.size()) + " roles");
  }
  if (!config.adapters.empty() && config.adapters.size() != config.roles.size()) {
    return InvalidArgument("grpo.alternation.adapters: " + std::to_string(config.adapters.size()) +
                           " adapters for " + std::to_string(config.roles.size()) + " roles");
  }
  for (size_t i = 0; i < config.roles.size(); ++i) {
    const std::string& role = config.roles[i];
    // A role names its adapter's served name and directory, and tags segments "<role>@...".
    if (role.empty() || role.size() > 64 || role.find_first_of("@/") != std::string::npos) {
      return InvalidArgument("grpo.alternation.roles: '" + role +
                             "' is not a role name (1-64 bytes, no '@' or '/')");
    }
    for (size_t j = 0; j < i; ++j) {
      if (config.roles[j] == role) {
        return InvalidArgument("grpo.alternation.roles: '" + role + "' is listed twice");
      }
    }
  }
  return Status::Ok();
}

bool SegmentHasRole(const v1::TokenSegment& segment, const std::string& role) {
  const std::string& s = segment.source();
  if (role.empty() || s.size() < role.size() || s.compare(0, role.size(), role) != 0) {
    return false;
  }
  return s.size() == role.size() || s[role.size()] == '@';
}

int64_t FreezeInactiveRoles(v1::Trajectory& t, const std::string& active) {
  int64_t frozen = 0;
  bool active_left = false;
  for (v1::TokenSegment& seg : *t.mutable_segments()) {
    if (!seg.trainable()) continue;
    if (SegmentHasRole(seg, active)) {
      active_left = true;
      continue;
    }
    seg.set_trainable(false);
    frozen += seg.ids_size();
  }
  if (frozen > 0 && !active_left && t.failure().reason() == v1::FAILURE_REASON_NONE) {
    // Nothing of this episode trains this step; say why instead of an empty failure.
    t.mutable_failure()->set_reason(v1::FAILURE_REASON_FORMAT_ERROR);
    t.mutable_failure()->set_message(
        "grpo.alternation: the episode has no segment of the active "
        "role '" +
        active +
        "' (e.g. the frozen decomposer wrote no "
        "valid subtask list)");
  }
  return frozen;
}

}  // namespace allot::trainer::grpo
