// `allot export RUN --format peft | merged` for LLM policies (GRPO and SFT runs):
//
//   peft    OUT/adapter_config.json + OUT/adapter_model.safetensors with PEFT's tensor names:
//           what PeftModel.from_pretrained and vLLM's --lora-modules / /v1/load_lora_adapter load.
//   merged  OUT/model.safetensors with the adapter folded into the weights (W + s B A), the base
//           model's config.json (torch_dtype set to the written dtype) and its tokenizer and
//           generation files: a Hugging Face directory that loads as a plain CausalLM.
//
// RUN is a run directory (its newest checkpoint that verifies), a checkpoint step directory, or
// a step's policy/ directory.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace allot::trainer {

struct PolicyExportOptions {
  std::string format = "peft";  // peft | merged
  std::string out;              // output directory (created; files in it are replaced)
  std::string base_model;       // overrides the base model the checkpoint records
  std::string dtype = "auto";   // merged: auto (the trained dtype) | float32 | bfloat16 | float16
};

// The checkpoint step directory holding RUN's policy. Errors name what was looked at.
Result<std::string> ResolvePolicyCheckpoint(const std::string& run);

// Writes the export; returns the output directory.
Result<std::string> ExportPolicy(const std::string& checkpoint_dir,
                                 const PolicyExportOptions& options);

// The files of a Hugging Face tokenizer (and generation config) that a merged export copies.
const std::vector<std::string>& TokenizerFileNames();

}  // namespace allot::trainer
