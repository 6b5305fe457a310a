// Alternating GRPO over the roles of a policy (R2-Reasoner Sec. 4.3): the Task Decomposer is
// trained with the Subtask Allocator frozen, then the reverse, switching every
// `grpo.alternation.switch_every` steps. Each role is its own LoRA adapter (role_adapters.h):
// only the active role's adapter is attached during the update and published after it, so the
// frozen role's weights do not move. Its policy segments are context only: they carry no loss,
// while the whole trajectory's reward still sets the group-relative advantage of the active
// role's tokens.
//
// An env tags a policy segment with its role in TokenSegment.source as "<role>@<endpoint>"
// (envs/r2 does). A trainable segment of no role listed in the config is frozen as well: in an
// alternating run, only the active role learns.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "proto/allot/v1/rollout.pb.h"
#include "trainer/grpo/grpo_config.h"

namespace allot::trainer::grpo {

// The role trained at `step` (0-based): roles[(step / switch_every) % roles.size()]. Empty when
// alternation is off.
std::string ActiveRole(const AlternationConfig& config, int64_t step);

// `scheduled` (grpo.lr through the schedule) rescaled to the active role's alternation.lr.
// Unchanged when alternation is off, alternation.lr is empty or grpo.lr is 0.
double RoleLearningRate(const GrpoConfig& grpo, int64_t step, double scheduled);

// InvalidArgument when roles is empty or repeats a role, a role is not a plain name (empty,
// longer than 64 bytes, or holding '@' or '/'), or alternation.lr or alternation.adapters is
// neither empty nor one per role.
Status ValidateAlternation(const AlternationConfig& config);

// Whether `segment` was tagged with `role` ("<role>" or "<role>@...").
bool SegmentHasRole(const v1::TokenSegment& segment, const std::string& role);

// Marks every trainable segment of `t` that does not belong to `active` as not trainable;
// returns how many ids it froze. An episode left with nothing to train gets a format-error
// failure naming the role (the learner drops it, and a step of only such episodes fails with
// that message).
int64_t FreezeInactiveRoles(v1::Trajectory& t, const std::string& active);

}  // namespace allot::trainer::grpo
