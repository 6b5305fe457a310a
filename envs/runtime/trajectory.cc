#include "envs/runtime/trajectory.h"

namespace allot::envs::runtime {

const char* SegmentRoleName(SegmentRole role) {
  switch (role) {
    case SegmentRole::kPrompt:
      return "prompt";
    case SegmentRole::kPolicy:
      return "policy";
    case SegmentRole::kTool:
      return "tool";
    case SegmentRole::kEnv:
      return "env";
    case SegmentRole::kOtherModel:
      return "other_model";
  }
  return "unknown";
}

const char* FailureReasonName(FailureReason reason) {
  switch (reason) {
    case FailureReason::kNone:
      return "none";
    case FailureReason::kEndpointError:
      return "endpoint_error";
    case FailureReason::kTimeout:
      return "timeout";
    case FailureReason::kToolError:
      return "tool_error";
    case FailureReason::kFormatError:
      return "format_error";
    case FailureReason::kEnvError:
      return "env_error";
    case FailureReason::kCancelled:
      return "cancelled";
  }
  return "unknown";
}

std::vector<int64_t> Trajectory::AllIds() const {
  std::vector<int64_t> ids;
  for (const Segment& s : segments) ids.insert(ids.end(), s.ids.begin(), s.ids.end());
  return ids;
}

void Trajectory::SetReward(const std::string& name, double value) {
  for (auto& [n, v] : rewards) {
    if (n == name) {
      v = value;
      return;
    }
  }
  rewards.emplace_back(name, value);
}

}  // namespace allot::envs::runtime
