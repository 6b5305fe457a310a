// LoRA adapters held in memory by name, swapped into the one served model on demand.
//
// The model carries one adapter at a time (models::LoraLinear). The store keeps every loaded
// adapter's A and B matrices and installs the requested one before a batch runs, so any number
// of adapters share one copy of the base weights. Not thread-safe: the engine serialises calls
// with the model.
#pragma once

#include <ATen/core/Tensor.h>

#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "models/causal_lm.h"
#include "models/peft.h"

namespace allot::llm::serve {

class AdapterStore {
 public:
  explicit AdapterStore(models::CausalLMImpl* model) : model_(model) {}

  // Reads a PEFT directory (adapter_config.json + adapter_model.safetensors). AlreadyExists for
  // a taken name, NotFound for a missing directory, InvalidArgument for an adapter that does
  // not fit the model.
  Status Load(const std::string& name, const std::string& dir);
  // With `detach` false an installed adapter stays in the model until the next Activate(), so
  // a batch already decoding with it can finish.
  Status Unload(const std::string& name, bool detach = true);
  bool Has(const std::string& name) const { return adapters_.count(name) > 0; }
  // name -> directory.
  std::map<std::string, std::string> List() const;
  // The SHA-256 (64 lower-case hex digits) of the adapter's adapter_model.safetensors, the
  // file's bytes as they were when the adapter was loaded; "" for the base model ("") or an
  // unknown name. Replies report it so a learner can check which weights answered.
  std::string Sha256(const std::string& name) const;

  // Puts adapter `name` ("" = none: the base model) into the model.
  Status Activate(const std::string& name);
  const std::string& active() const { return active_; }

 private:
  struct SiteWeights {
    size_t site = 0;  // index into model->linear_sites()
    at::Tensor a;     // [r, in]
    at::Tensor b;     // [out, r]
  };
  struct Adapter {
    std::string dir;
    std::string sha256;  // of dir/adapter_model.safetensors, at load
    models::AdapterConfig config;
    std::vector<SiteWeights> weights;
  };

  models::CausalLMImpl* model_;
  std::map<std::string, Adapter> adapters_;
  std::string active_;
  bool stale_ = false;  // a failed Load left the model's adapter state unknown
};

}  // namespace allot::llm::serve
