// The rollout layer's side of the env contract: envs (envs/runtime/env.h) take a plain
// EpisodeInput and return a plain trajectory (envs/runtime/trajectory.h); the worker builds the
// input from the episode request and converts the trajectory to the wire message here. Envs
// never see gRPC types.
#pragma once

#include "envs/runtime/env.h"
#include "envs/runtime/trajectory.h"
#include "proto/allot/v1/rollout.pb.h"

namespace allot::rollout {

// The wire trajectory of a plain one. Info entries beyond the protocol's limits (64 entries,
// 128-byte keys, 4 KiB values) are cut, never dropped silently: a cut value ends in "...".
v1::Trajectory ToProto(const envs::runtime::Trajectory& t);
// The inverse, for learners and tools that read wire trajectories as plain ones.
envs::runtime::Trajectory FromProto(const v1::Trajectory& t);

v1::SegmentRole ToProto(envs::runtime::SegmentRole role);
v1::FailureReason ToProto(envs::runtime::FailureReason reason);
envs::runtime::FailureReason FromProto(v1::FailureReason reason);

// The env's view of an episode request: id, dataset item, sampling, seed, group and the
// exploration rate. The host sets the rest (policy, deadline, cancellation flag).
envs::runtime::EpisodeInput ToEpisodeInput(const v1::EpisodeRequest& request);

// The policy kind on the wire and back (an unknown or unspecified kind is kNone).
v1::PolicyKind ToProto(envs::runtime::PolicySnapshot::Kind kind);
envs::runtime::PolicySnapshot::Kind FromProto(v1::PolicyKind kind);

}  // namespace allot::rollout
