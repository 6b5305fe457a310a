#include "llm/serve/adapter_store.h"

#include <torch/torch.h>

#include <filesystem>

#include "core/sha256.h"

namespace allot::llm::serve {

Status AdapterStore::Load(const std::string& name, const std::string& dir) {
  if (name.empty()) return InvalidArgument("lora_name must not be empty");
  if (Has(name)) return AlreadyExists("the lora adapter '" + name + "' has already been loaded");
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return NotFound("lora_path " + dir + ": no such adapter directory");
  }
  // What replies report as the adapter's identity (adapter_sha256): the weights file's bytes.
  auto sha = Sha256File(dir + "/adapter_model.safetensors");
  if (!sha.ok()) return NotFound("lora_path " + dir + ": " + sha.status().message());
  // models::LoadAdapter validates the files against the model and installs the adapter; its
  // tensors are then copied out so that the model can carry other adapters.
  stale_ = true;  // the model's adapter state is unknown until this succeeds
  auto loaded = models::LoadAdapter(*model_, dir);
  if (!loaded.ok()) {
    model_->DetachLora();
    active_.clear();
    stale_ = false;
    return loaded.status().code() == StatusCode::kNotFound
               ? loaded.status()
               : InvalidArgument(loaded.status().message());
  }
  Adapter adapter;
  adapter.dir = dir;
  adapter.sha256 = std::move(*sha);
  adapter.config = *loaded;
  const auto& sites = model_->linear_sites();
  for (size_t i = 0; i < sites.size(); ++i) {
    const auto& lin = sites[i].linear;
    if (!lin->has_lora()) continue;
    adapter.weights.push_back({i, lin->lora_A.detach().clone(), lin->lora_B.detach().clone()});
  }
  adapters_[name] = std::move(adapter);
  active_ = name;
  stale_ = false;
  return Status::Ok();
}

Status AdapterStore::Unload(const std::string& name, bool detach) {
  auto it = adapters_.find(name);
  if (it == adapters_.end()) return NotFound("the lora adapter '" + name + "' cannot be found");
  adapters_.erase(it);
  if (active_ == name && detach) {
    model_->DetachLora();
    active_.clear();
  }
  return Status::Ok();
}

std::map<std::string, std::string> AdapterStore::List() const {
  std::map<std::string, std::string> out;
  for (const auto& [name, a] : adapters_) out[name] = a.dir;
  return out;
}

std::string AdapterStore::Sha256(const std::string& name) const {
  auto it = adapters_.find(name);
  return it == adapters_.end() ? std::string() : it->second.sha256;
}

Status AdapterStore::Activate(const std::string& name) {
  if (name == active_ && !stale_ && (name.empty() || Has(name))) return Status::Ok();
  const Adapter* adapter = nullptr;
  if (!name.empty()) {
    auto it = adapters_.find(name);
    if (it == adapters_.end()) {
      return NotFound("the lora adapter '" + name + "' cannot be found");
    }
    adapter = &it->second;
  }
  model_->DetachLora();
  active_.clear();
  stale_ = false;
  if (adapter == nullptr) return Status::Ok();
  torch::NoGradGuard no_grad;
  const auto& sites = model_->linear_sites();
  // SetLora, not AttachLora: attaching draws a fresh A from the process's default generator,
  // which a learner in the same process seeds for its LoRA dropout; a swap in the middle of its
  // update moved its dropout masks (two runs of one seed then trained different adapters).
  for (const auto& w : adapter->weights) {
    auto lin = sites[w.site].linear.ptr();
    lin->SetLora(adapter->config.spec, w.a.clone(), w.b.clone());
    lin->set_lora_enabled(true);
  }
  active_ = name;
  return Status::Ok();
}

}  // namespace allot::llm::serve
