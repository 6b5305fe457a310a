// One LoRA adapter per role of an alternating GRPO run (R2-Reasoner Sec. 4.3): the Task
// Decomposer and the Subtask Allocator are two models, M_decomp(theta_decomp) and
// M_alloc(theta_alloc), and "in each iteration, one module's parameters are updated while the
// other remains fixed". Each role has its own LoRA (rank, scale and cold start, Table 7: rank 32
// decomposer, 64 allocator), AdamW state, KL reference, publisher and served name
// ("<prefix>-<role>-v<N>", N the policy version it was last published at).
//
// The model holds one adapter at a time. Activate(role) attaches that role's tensors (their
// storage, not a copy: CausalLMImpl::SetLora), so a phase's forward, backward and optimizer step
// reach the active role's tensors only and every other role's stay bit for bit as they were. A
// trajectory holds both roles' turns; with the active role's adapter attached, its turns are
// scored as its served adapter sampled them (the turns before them are context, read by the
// attached adapter, as the endpoint reads them for that role).
//
// Checkpoints: DIR/adapters/<role>/ (PEFT), DIR/optimizer.<role>.safetensors and DIR/roles.json
// (each role's published version).
//
// Not thread-safe.
#pragma once

#include <torch/optim/adamw.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "envs/runtime/env.h"
#include "models/causal_lm.h"
#include "trainer/grpo/adapter_publisher.h"
#include "trainer/grpo/grpo_config.h"

namespace allot::trainer::comm {
class Communicator;
}

namespace allot::trainer::grpo {

class RoleAdapters {
 public:
  struct Adapter {
    std::string role;
    models::LoraSpec spec;
    std::vector<std::string> target_kinds;
    std::vector<at::Tensor> tensors;  // CausalLMImpl::LoraParameters() order
    std::unique_ptr<torch::optim::AdamW> optimizer;
    // The KL term's reference: the cold start's weights (init_from with kl_coef > 0); empty: the
    // base model.
    std::vector<at::Tensor> reference;
    std::unique_ptr<AdapterPublisher> publisher;  // set by SetPublishers
    uint64_t version = 0;                         // last published at (0: not yet)
  };

  // Attaches each role's adapter in turn (grpo.alternation.adapters[i], or grpo.lora when that
  // list is empty) and takes it over; the first role's is left attached. With `comm` (data
  // parallel), every rank starts from rank 0's adapters.
  static Result<std::unique_ptr<RoleAdapters>> Create(models::CausalLMImpl& model,
                                                      const GrpoConfig& grpo,
                                                      comm::Communicator* comm);

  // Attaches `role`'s adapter to the model; NotFound for a role that has none.
  Result<Adapter*> Activate(const std::string& role);
  const std::string& active() const { return active_; }
  const Adapter* Find(const std::string& role) const;
  const std::vector<Adapter>& adapters() const { return adapters_; }

  // One publisher per role: `base`'s endpoint and options, prefix "<base.prefix>-<role>" and
  // root "<base.root>/<role>".
  void SetPublishers(llm::Client* client, const PublisherOptions& base);
  // Each role's publisher adopts what an earlier process of the run left loaded (resume), or
  // unloads what an earlier run of the name left (fresh run).
  void AdoptServed();
  void UnloadStale();
  // Writes and loads every role's adapter, each at its own version (`version` for a role not
  // published yet): a run's first publication, and a resumed run's, whose endpoint may be new.
  Status PublishAll(uint64_t version);
  // Writes and loads the active role's adapter as version `version`; the others are untouched.
  Status PublishActive(uint64_t version);
  // The snapshot of the served adapters: adapter_name and adapter_uri are the active role's,
  // role_adapters every role's.
  void FillSnapshot(envs::runtime::PolicySnapshot& snap) const;
  // Unloads the active role's versions below `keep_from`, except the one it was published at
  // before its newest (a worker may still start an episode with the previous snapshot).
  void UnloadActiveBelow(uint64_t keep_from);

  Status Save(const std::string& dir, const std::string& base_model, int64_t step);
  // Restores Save's files into the roles' own tensors, optimizers and versions; returns the
  // optimizers' schedule step (DataLoss when the roles disagree on it).
  Result<int64_t> Load(const std::string& dir);

 private:
  explicit RoleAdapters(models::CausalLMImpl& model) : model_(&model) {}
  Adapter* FindMutable(const std::string& role);

  models::CausalLMImpl* model_;
  std::vector<Adapter> adapters_;
  std::string active_;
  std::map<std::string, uint64_t> previous_;  // role -> the version before its newest
};

}  // namespace allot::trainer::grpo
