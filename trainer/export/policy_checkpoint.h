// The policy part of an LLM run's checkpoint, shared by the GRPO and SFT engines and read by
// `allot export`. Inside a checkpoint step directory (core/checkpoint_store.h):
//
//   step-N/policy/policy.json                {"format": "adapter" | "full", "base_model": DIR,
//                                             "tokenizer": DIR or FILE, "dtype": "bfloat16"}
//   step-N/policy/adapter_config.json        format "adapter": the LoRA adapter in PEFT's
//   step-N/policy/adapter_model.safetensors  format (models/peft.h), loadable by PEFT and vLLM
//   step-N/policy/config.json                format "full": every weight (full fine-tuning,
//   step-N/policy/model.safetensors          or SFT of a model trained from scratch)
//
// The optimizer, scheduler, RNG and data-cursor state are the engine's own files beside
// policy/. Only rank 0 writes a checkpoint (trainer/comm/communicator.h).
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "models/causal_lm.h"

namespace allot::trainer {

inline constexpr char kPolicyDirName[] = "policy";

enum class PolicyFormat { kAdapter, kFull };

struct PolicyCheckpointInfo {
  PolicyFormat format = PolicyFormat::kAdapter;
  std::string base_model;  // Hugging Face directory of the base weights (model.path)
  std::string tokenizer;   // tokenizer file or directory (model.tokenizer; empty = base_model)
  std::string dtype;       // weight dtype of the trained model
  std::string dir;         // the policy/ directory this was read from
};

// Writes `model` into CHECKPOINT_DIR/policy/: its adapter when it carries one, else all weights.
// `base_model` and `tokenizer` are recorded as given (made absolute when relative, so that the
// run can be exported from another working directory).
Status SavePolicyCheckpoint(const models::CausalLMImpl& model, const std::string& checkpoint_dir,
                            const std::string& base_model, const std::string& tokenizer = "");

// Reads CHECKPOINT_DIR/policy/policy.json. Errors name the file and the field. Also accepted, as
// format "adapter" with the base model that adapter_config.json names: a checkpoint holding a
// PEFT directory `adapter/` (the GRPO engine's), and a PEFT directory itself.
Result<PolicyCheckpointInfo> ReadPolicyCheckpoint(const std::string& checkpoint_dir);

// Whether DIR holds a policy in one of the layouts ReadPolicyCheckpoint accepts.
bool HasPolicyCheckpoint(const std::string& dir);

// The trained policy: the base model with the adapter attached (format "adapter"), or the full
// weights (format "full"). `base_model` overrides the recorded base directory when not empty.
Result<std::shared_ptr<models::CausalLMImpl>> LoadPolicyCheckpoint(
    const std::string& checkpoint_dir, const models::LoadOptions& options = {},
    const std::string& base_model = "");

}  // namespace allot::trainer
