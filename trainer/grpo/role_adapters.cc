#include "trainer/grpo/role_adapters.h"

#include <torch/torch.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "models/peft.h"
#include "trainer/comm/communicator.h"
#include "trainer/grpo/grpo_optim.h"
#include "trainer/optim/adamw.h"
#include "trainer/optim/optimizer_state.h"

namespace allot::trainer::grpo {

namespace {

// The LoRA tensors by name, for MakeAdamW (all of them rank 2: one group with weight decay);
// the same names as the single-adapter learner's.
NamedParameters Named(const std::vector<at::Tensor>& tensors) {
  NamedParameters out;
  for (size_t i = 0; i < tensors.size(); ++i) {
    out.emplace_back("lora." + std::to_string(i), tensors[i]);
  }
  return out;
}

std::string AdapterPath(const std::string& dir, const std::string& role) {
  return dir + "/adapters/" + role;
}

std::string OptimizerPath(const std::string& dir, const std::string& role) {
  return dir + "/optimizer." + role + ".safetensors";
}

}  // namespace

Result<std::unique_ptr<RoleAdapters>> RoleAdapters::Create(models::CausalLMImpl& model,
                                                           const GrpoConfig& grpo,
                                                           comm::Communicator* comm) {
  const AlternationConfig& alt = grpo.alternation;
  if (alt.roles.empty()) return InvalidArgument("grpo.alternation.roles: empty");
  std::unique_ptr<RoleAdapters> out(new RoleAdapters(model));
  const OptimConfig optim = GrpoOptimConfig(grpo);
  for (size_t i = 0; i < alt.roles.size(); ++i) {
    const bool own = !alt.adapters.empty();
    const models::LoraConfig& config = own ? alt.adapters.at(i) : grpo.lora;
    const std::string where =
        own ? "grpo.alternation.adapters[" + std::to_string(i) + "] (" + alt.roles[i] + ")"
            : "grpo.lora";
    if (!config.enabled) {
      return InvalidArgument(where +
                             ".enabled: every role trains a LoRA adapter (policy sync goes by "
                             "adapter only)");
    }
    ALLOT_RETURN_IF_ERROR(models::ApplyLoraConfig(model, config).Annotate(where));
    if (comm != nullptr && comm->distributed()) {
      ALLOT_RETURN_IF_ERROR(comm->BroadcastParameters(model.LoraParameters()));
    }
    Adapter a;
    a.role = alt.roles[i];
    a.tensors = model.LoraParameters();
    for (const models::LinearSite& site : model.linear_sites()) {
      if (!site.linear->has_lora()) continue;
      a.spec = site.linear->lora_spec();
      if (std::find(a.target_kinds.begin(), a.target_kinds.end(), site.kind) ==
          a.target_kinds.end()) {
        a.target_kinds.push_back(site.kind);
      }
    }
    // Taken before a resume restores the trained adapters: the reference stays the cold start.
    if (!config.init_from.empty() && grpo.kl_coef > 0.0) {
      for (const at::Tensor& p : a.tensors) a.reference.push_back(p.detach().clone());
    }
    ALLOT_ASSIGN_OR_RETURN(a.optimizer, MakeAdamW(optim, Named(a.tensors)));
    out->adapters_.push_back(std::move(a));
  }
  ALLOT_RETURN_IF_ERROR(out->Activate(alt.roles.front()).status());
  return out;
}

RoleAdapters::Adapter* RoleAdapters::FindMutable(const std::string& role) {
  for (Adapter& a : adapters_) {
    if (a.role == role) return &a;
  }
  return nullptr;
}

const RoleAdapters::Adapter* RoleAdapters::Find(const std::string& role) const {
  for (const Adapter& a : adapters_) {
    if (a.role == role) return &a;
  }
  return nullptr;
}

Result<RoleAdapters::Adapter*> RoleAdapters::Activate(const std::string& role) {
  Adapter* a = FindMutable(role);
  if (a == nullptr) return NotFound("grpo.alternation: no adapter for the role '" + role + "'");
  ALLOT_RETURN_IF_ERROR(model_->SetLora(a->spec, a->target_kinds, a->tensors));
  active_ = role;
  return a;
}

void RoleAdapters::SetPublishers(llm::Client* client, const PublisherOptions& base) {
  for (Adapter& a : adapters_) {
    PublisherOptions o = base;
    o.prefix = base.prefix + "-" + a.role;
    o.root = base.root + "/" + a.role;
    a.publisher = std::make_unique<AdapterPublisher>(client, o);
  }
}

void RoleAdapters::AdoptServed() {
  for (Adapter& a : adapters_) a.publisher->AdoptServed();
}

void RoleAdapters::UnloadStale() {
  for (Adapter& a : adapters_) a.publisher->UnloadStale();
}

Status RoleAdapters::PublishAll(uint64_t version) {
  const std::string active = active_;
  for (Adapter& a : adapters_) {
    ALLOT_RETURN_IF_ERROR(Activate(a.role).status());
    if (a.version == 0) a.version = version;
    ALLOT_RETURN_IF_ERROR(a.publisher->Publish(*model_, a.version));
  }
  return Activate(active).status();
}

Status RoleAdapters::PublishActive(uint64_t version) {
  ALLOT_ASSIGN_OR_RETURN(Adapter * a, Activate(active_));
  ALLOT_RETURN_IF_ERROR(a->publisher->Publish(*model_, version));
  previous_[a->role] = a->version;
  a->version = version;
  return Status::Ok();
}

void RoleAdapters::FillSnapshot(envs::runtime::PolicySnapshot& snap) const {
  snap.role_adapters.clear();
  for (const Adapter& a : adapters_) {
    envs::runtime::RoleAdapter r;
    r.role = a.role;
    r.adapter_name = a.publisher->AdapterName(a.version);
    r.version = a.version;
    r.adapter_uri = a.publisher->AdapterDir(a.version);
    if (a.role == active_) {
      snap.adapter_name = r.adapter_name;
      snap.adapter_uri = r.adapter_uri;
    }
    snap.role_adapters.push_back(std::move(r));
  }
}

void RoleAdapters::UnloadActiveBelow(uint64_t keep_from) {
  Adapter* a = FindMutable(active_);
  if (a == nullptr) return;
  // Never the role's current version: an idle role's may be far below the policy's.
  keep_from = std::min(keep_from, a->version);
  auto it = previous_.find(a->role);
  if (it != previous_.end() && it->second > 0) keep_from = std::min(keep_from, it->second);
  a->publisher->UnloadBelow(keep_from);
}

Status RoleAdapters::Save(const std::string& dir, const std::string& base_model, int64_t step) {
  const std::string active = active_;
  nlohmann::json versions = nlohmann::json::object();
  for (Adapter& a : adapters_) {
    ALLOT_RETURN_IF_ERROR(Activate(a.role).status());
    ALLOT_RETURN_IF_ERROR(models::SaveAdapter(*model_, AdapterPath(dir, a.role), base_model));
    ALLOT_ASSIGN_OR_RETURN(std::string opt, SerializeAdamWState(*a.optimizer, step));
    ALLOT_RETURN_IF_ERROR(WriteFileAtomic(OptimizerPath(dir, a.role), opt));
    versions[a.role] = a.version;
  }
  ALLOT_RETURN_IF_ERROR(WriteFileAtomic(dir + "/roles.json", versions.dump(2) + "\n"));
  return Activate(active).status();
}

Result<int64_t> RoleAdapters::Load(const std::string& dir) {
  const std::string active = active_;
  std::string text;
  const std::string roles_path = dir + "/roles.json";
  ALLOT_RETURN_IF_ERROR(ReadFile(roles_path, &text));
  const auto versions = nlohmann::json::parse(text, nullptr, false);
  if (!versions.is_object()) return DataLoss(roles_path + ": not a JSON object");
  int64_t schedule_step = -1;
  for (Adapter& a : adapters_) {
    const std::string path = AdapterPath(dir, a.role);
    if (!versions.contains(a.role) || !versions.at(a.role).is_number_unsigned()) {
      return DataLoss(roles_path + ": no version for the role '" + a.role + "'");
    }
    ALLOT_ASSIGN_OR_RETURN(models::AdapterConfig config, models::LoadAdapter(*model_, path));
    const std::vector<at::Tensor> loaded = model_->LoraParameters();
    bool same = config.spec.r == a.spec.r && config.spec.alpha == a.spec.alpha &&
                config.spec.use_rslora == a.spec.use_rslora && loaded.size() == a.tensors.size();
    for (size_t i = 0; same && i < loaded.size(); ++i) {
      same = loaded[i].sizes().equals(a.tensors[i].sizes());
    }
    if (!same) {
      return DataLoss(path + ": the checkpoint's " + a.role + " adapter (r " +
                      std::to_string(config.spec.r) + ") is not the one the recipe makes (r " +
                      std::to_string(a.spec.r) + ")");
    }
    {
      torch::NoGradGuard no_grad;
      for (size_t i = 0; i < loaded.size(); ++i) a.tensors[i].copy_(loaded[i]);
    }
    std::string opt;
    const std::string opt_path = OptimizerPath(dir, a.role);
    ALLOT_RETURN_IF_ERROR(ReadFile(opt_path, &opt));
    ALLOT_ASSIGN_OR_RETURN(int64_t step, RestoreAdamWState(*a.optimizer, opt, opt_path));
    if (schedule_step >= 0 && step != schedule_step) {
      return DataLoss(opt_path + ": schedule step " + std::to_string(step) + ", the other roles' " +
                      std::to_string(schedule_step));
    }
    schedule_step = step;
    a.version = versions.at(a.role).get<uint64_t>();
  }
  previous_.clear();
  ALLOT_RETURN_IF_ERROR(Activate(active).status());
  return schedule_step;
}

}  // namespace allot::trainer::grpo
