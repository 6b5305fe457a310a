// The env interface the rollout worker runs, and the registry that names envs.
//
// The envs (coger, rlot, r2, deeptool, atlas) live under envs/ and are registered with
// EnvRegistry::Global() from the app before the worker starts (explicit calls, not static
// initialisers, which static libraries drop).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/status.h"
#include "envs/runtime/env.h"
#include "proto/allot/v1/rollout.pb.h"

namespace allot::rollout {

// The policy a worker holds: navigator weights (opaque bytes; the DQN trainer defines and
// deserializes them) or a LoRA adapter reference. Immutable once published; episodes keep the
// snapshot they started with, so a swap never changes a running episode.
struct PolicySnapshot {
  uint64_t version = 0;
  v1::PolicyKind kind = v1::POLICY_KIND_UNSPECIFIED;
  std::string bytes;  // POLICY_KIND_QNET_WEIGHTS
  std::string adapter_name;
  std::string adapter_uri;
  // POLICY_KIND_LORA_ADAPTER with one adapter per role (PolicyChunk.role_adapters).
  std::vector<envs::runtime::RoleAdapter> role_adapters;
};

// What an env sees of one episode.
struct EpisodeContext {
  const v1::EpisodeRequest* request = nullptr;
  // The worker's policy when the episode started (null before any update arrived).
  std::shared_ptr<const PolicySnapshot> policy;
  // Absolute deadline (time_point::max() when none).
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  // Set when the learner cancels the episode or a drain times out; long envs should poll it.
  const std::atomic<bool>* cancelled = nullptr;

  bool Cancelled() const { return cancelled != nullptr && cancelled->load(); }
};

// One kind of episode. RunEpisode is called concurrently from the worker's threads and must be
// thread-safe. Expected failures (endpoint down, timeout, bad output) belong in the returned
// trajectory's `failure` so that the learner can close the episode; a non-OK Status is for
// episodes that cannot produce a trajectory at all (the worker turns it into a failed one).
class Env {
 public:
  virtual ~Env() = default;
  virtual Result<v1::Trajectory> RunEpisode(const EpisodeContext& ctx) = 0;
};

// Builds an env from the request's env_config text (YAML or JSON).
using EnvFactory = std::function<Result<std::unique_ptr<Env>>(const std::string& env_config)>;

// Thread-safe name -> factory map. Plain-C++ envs (envs/runtime/env.h) register through
// RegisterRuntimeEnv and run behind a RuntimeEnvAdapter (rollout/runtime_env_adapter.h).
class EnvRegistry : public envs::runtime::EnvRegistrar {
 public:
  static EnvRegistry& Global();

  // Replaces an existing factory of the same name.
  void Register(const std::string& name, EnvFactory factory);
  void RegisterRuntimeEnv(const std::string& name, envs::runtime::EnvFactory factory) override;
  bool Has(const std::string& name) const;
  std::vector<std::string> Names() const;
  Result<std::unique_ptr<Env>> Create(const std::string& name, const std::string& env_config) const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, EnvFactory> factories_;
};

// Env instances keyed by (name, env_config), built once and shared by all episodes.
class EnvCache {
 public:
  explicit EnvCache(const EnvRegistry* registry) : registry_(registry) {}
  Result<std::shared_ptr<Env>> Get(const std::string& name, const std::string& env_config);

 private:
  const EnvRegistry* registry_;
  std::mutex mu_;
  std::map<std::pair<std::string, std::string>, std::shared_ptr<Env>> envs_;
};

}  // namespace allot::rollout
