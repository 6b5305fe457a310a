// The ATLAS env (ATLAS review page; notes.md): agentic test-time scaling. An orchestrator LLM
// owns the control loop; its one action, explore(solver?, effort?, strategy?), runs a fresh,
// independent solver on the original problem. Only the orchestrator keeps the evidence, as a
// Thought / Action / Observation trace (explore_action.h); it decides when to stop within the
// explore budget (8 calls; 20 for the multi-model variant, which starts with cheaper models
// and escalates) and writes the final answer itself. The integrator ablation hands the pool
// to a separate synthesis step instead.
//
// One episode:
//   prompt (masked)  the orchestrator template: the problem, the budget, the solvers (with
//                    their prices in the multi-model variant), the effort's stopping guidance
//   per turn         the orchestrator's Thought + Action (the policy: trainable, log-probs,
//                    the adapter version that sampled it), stopped at "Observation:"
//   explore          the solver's call (its own token space, accounted per endpoint; a tool
//                    call of the runtime, so limits.max_tool_calls is the explore budget),
//                    then the Observation (masked, role other-model) joins the trace
//   final            "Final Answer: ..." graded against the reference (reward "accuracy")
// A malformed turn gets an Observation naming what is wrong (masked, role env); more than
// max_malformed_turns end the episode with a format failure. Past the budget an explore gets
// "budget exhausted" and the next turn must answer. A solver that fails (endpoint error,
// cut-off reply) is an Observation, not the episode's end; the orchestrator's own endpoint
// failing ends it.
//
// ATLAS itself is inference only: the recipe is `allot eval`. The trajectory is nevertheless
// a complete GRPO sample (policy segments, "accuracy" reward), which is allot's own extension.
//
// Thread-safe: episodes run concurrently on one env.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "envs/atlas/atlas_config.h"
#include "envs/atlas/solver_report.h"
#include "envs/runtime/env.h"
#include "envs/runtime/env_descriptor.h"

namespace allot::llm {
class Client;
}

namespace allot::envs::atlas {

class AtlasEnv : public runtime::Env {
 public:
  // `client`: the endpoint pool; null = built from config.endpoints.
  static Result<std::unique_ptr<AtlasEnv>> Create(AtlasEnvConfig config,
                                                  std::shared_ptr<llm::Client> client = nullptr);
  // From env_config text: YAML or JSON of AtlasEnvConfig, or a whole recipe (its env.atlas,
  // endpoints and gpu sections).
  static Result<std::unique_ptr<AtlasEnv>> FromConfigText(const std::string& text);
  ~AtlasEnv() override;

  Result<runtime::Trajectory> Run(const runtime::EpisodeInput& input) override;

  const AtlasEnvConfig& config() const { return config_; }
  // YAML a worker rebuilds this env from (prompt texts inline; keys never written).
  std::string ConfigText() const;

 private:
  explicit AtlasEnv(AtlasEnvConfig config) : config_(std::move(config)) {}

  AtlasEnvConfig config_;
  std::shared_ptr<llm::Client> client_;
};

// Fills empty prompt texts from prompts.dir and checks every template's placeholders.
Status ResolvePrompts(AtlasPrompts& prompts);

// Registers "atlas".
void RegisterAtlasEnv(runtime::EnvRegistrar& registrar);

// "atlas" (envs/runtime/env_descriptor.h): the grpo engine's, its config env.atlas and the
// recipe's endpoints, gpu; `allot eval` runs atlas_eval.h's command.
const runtime::EnvDescriptor& AtlasEnvDescriptor();

}  // namespace allot::envs::atlas
