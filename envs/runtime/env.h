// The one env interface, in plain C++ types (no gRPC): an env runs in-process (allot eval,
// single-process training) and inside a rollout worker, which builds the EpisodeInput from the
// episode request and converts the returned Trajectory to the wire message
// (rollout/trajectory_convert.h).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "envs/runtime/trajectory.h"

namespace allot::envs::runtime {

// The policy the host holds when the episode starts. Immutable; an episode keeps its snapshot.
// One role's adapter in a policy of several (R2-Reasoner Sec. 4.3: the decomposer and the
// allocator are two LoRA adapters, updated one at a time).
struct RoleAdapter {
  std::string role;          // the segments' source tag, "<role>@<endpoint>"
  std::string adapter_name;  // served as this model name
  uint64_t version = 0;      // the policy version it was published at
  std::string adapter_uri;
};

struct PolicySnapshot {
  enum class Kind { kNone, kQnetWeights, kLoraAdapter };
  uint64_t version = 0;
  Kind kind = Kind::kNone;
  std::string bytes;  // kQnetWeights: safetensors of the navigator
  std::string adapter_name;
  std::string adapter_uri;
  // kLoraAdapter with one adapter per role; empty: adapter_name serves every turn.
  std::vector<RoleAdapter> role_adapters;

  // The role's adapter, or null when the policy has none for it.
  const RoleAdapter* AdapterOf(const std::string& role) const {
    for (const RoleAdapter& a : role_adapters) {
      if (a.role == role) return &a;
    }
    return nullptr;
  }
};

// How the policy endpoint samples (0 / empty = the env's default).
struct SamplingSpec {
  double temperature = 0.0;  // 0 = greedy
  double top_p = 0.0;        // 0 = endpoint default
  int64_t top_k = 0;
  int64_t max_tokens = 0;  // per policy turn; 0 = env default
  uint64_t seed = 0;       // 0 = unseeded
  std::vector<std::string> stop;
  // The exploration rate of a Q-net navigator, when the caller sets one.
  std::optional<double> epsilon;
};

struct EpisodeInput {
  std::string episode_id;
  std::string dataset_item;  // JSON text: question, reference answer, ...
  SamplingSpec sampling;
  uint64_t seed = 0;  // the env's own randomness
  std::string group_id;
  uint32_t group_index = 0;
  uint32_t group_size = 0;
  std::shared_ptr<const PolicySnapshot> policy;  // null before any policy exists
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  const std::atomic<bool>* cancelled = nullptr;  // polled by long envs

  bool Cancelled() const { return cancelled != nullptr && cancelled->load(); }
  uint64_t policy_version() const { return policy != nullptr ? policy->version : 0; }
};

// One kind of episode. Run is called concurrently and must be thread-safe. Expected failures
// (endpoint down, tool error, bad output, limits) end the episode inside the returned
// trajectory's `failure`; a non-OK Status is for episodes that cannot produce a trajectory at
// all (the host turns it into a failed one). Never aborts the process.
class Env {
 public:
  virtual ~Env() = default;
  virtual Result<Trajectory> Run(const EpisodeInput& input) = 0;
};

// Builds an env from its config text (YAML or JSON).
using EnvFactory = std::function<Result<std::unique_ptr<Env>>(const std::string& env_config)>;

// Where envs register: the rollout worker's registry (rollout/env_registry.h) implements it, and
// so can an in-process host, so that an env's Register function needs no rollout header.
class EnvRegistrar {
 public:
  virtual ~EnvRegistrar() = default;
  // Replaces an existing factory of the same name.
  virtual void Register(const std::string& name, EnvFactory factory) = 0;
};

}  // namespace allot::envs::runtime
