// LoRA adapters in PEFT's on-disk format, the format vLLM's /v1/load_lora_adapter reads:
//
//   DIR/adapter_config.json        {"peft_type": "LORA", "task_type": "CAUSAL_LM", "r": 16,
//                                   "lora_alpha": 32, "target_modules": [...], ...}
//   DIR/adapter_model.safetensors  base_model.model.model.layers.N.self_attn.q_proj.lora_A.weight
//                                  [r, in] and ...lora_B.weight [out, r], float32
//
// The same directory is the policy sync unit and the serving export (design.md).
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "models/causal_lm.h"
#include "models/lora.h"
#include "models/model_config.h"

namespace allot::models {

// What adapter_config.json says.
struct AdapterConfig {
  LoraSpec spec;
  std::vector<std::string> target_modules;  // projection kinds ("q_proj", ...)
  std::string base_model_name_or_path;
};

// "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight" for a site path and "A"/"B".
std::string PeftTensorName(const std::string& site_path, char which);

// adapter_config.json as PEFT writes it.
std::string AdapterConfigJson(const AdapterConfig& config);
// Parses adapter_config.json text; `source` names the file in errors. Rejects what allot cannot
// apply exactly (DoRA, biases, modules_to_save, rank/alpha patterns, other PEFT types).
Result<AdapterConfig> ParseAdapterConfig(const std::string& json_text, const std::string& source);

// Writes the model's adapter to DIR (created if needed). Fails when the model has no adapter.
Status SaveAdapter(const CausalLMImpl& model, const std::string& dir,
                   const std::string& base_model_name_or_path);

// Reads DIR's adapter, attaches it to `model` (replacing any adapter) and loads its weights.
// Every tensor must be present with the right shape, and no tensor may be left unused.
Result<AdapterConfig> LoadAdapter(CausalLMImpl& model, const std::string& dir);

// Attaches the adapter a recipe asks for: loaded from `init_from`, or fresh from the config.
// With `init_from`, the config's r, lora_alpha, lora_dropout, use_rslora and target_modules must
// be the adapter's (an error names the first that differs). Does nothing when `config.enabled`
// is false.
Status ApplyLoraConfig(CausalLMImpl& model, const LoraConfig& config);

}  // namespace allot::models
