// The rollout layer's side of the trajectory contract: envs return plain C++ trajectories
// (envs/runtime/trajectory.h); the worker converts them to the wire message here, and builds
// the env's plain EpisodeInput from the request. Envs never see gRPC types.
#pragma once

#include <memory>

#include "envs/runtime/env.h"
#include "envs/runtime/trajectory.h"
#include "proto/allot/v1/rollout.pb.h"
#include "rollout/env.h"

namespace allot::rollout {

// The wire trajectory of a plain one. Info entries beyond the protocol's limits (64 entries,
// 128-byte keys, 4 KiB values) are cut, never dropped silently: a cut value ends in "...".
v1::Trajectory ToProto(const envs::runtime::Trajectory& t);
// The inverse, for learners and tools that read wire trajectories as plain ones.
envs::runtime::Trajectory FromProto(const v1::Trajectory& t);

v1::SegmentRole ToProto(envs::runtime::SegmentRole role);
v1::FailureReason ToProto(envs::runtime::FailureReason reason);
envs::runtime::FailureReason FromProto(v1::FailureReason reason);

// The env's view of an episode request (sampling, seed, group, deadline, cancellation, policy).
// `ctx` must outlive the returned input (the cancellation flag is borrowed); `policy` is
// ctx.policy converted (ToRuntimePolicy), or null.
envs::runtime::EpisodeInput ToEpisodeInput(
    const EpisodeContext& ctx, std::shared_ptr<const envs::runtime::PolicySnapshot> policy);

// The policy snapshot in plain types (shares nothing with `p`: the bytes are copied).
std::shared_ptr<const envs::runtime::PolicySnapshot> ToRuntimePolicy(const PolicySnapshot& p);

}  // namespace allot::rollout
