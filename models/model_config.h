// Config sections of the model stack: which checkpoint to load and how, and the LoRA adapter.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config/schema.h"

namespace allot::models {

// `model:` in a recipe.
struct ModelConfig {
  std::string path;                     // Hugging Face directory: config.json + *.safetensors
  std::string tokenizer;                // tokenizer.json or a directory; empty = `path`
  std::string dtype = "auto";           // auto = config.json torch_dtype
  std::string device = "cpu";           // "cpu", "cuda", "cuda:1"
  int64_t logprob_chunk_tokens = 512;   // rows of [tokens, vocab] logits alive at once
  bool packing = true;                  // training log-probs pack variable-length batches
  bool gradient_checkpointing = false;  // recompute each decoder layer in backward
  int64_t checkpoint_layers = -1;       // with it: only the first N layers (-1 = all)

  void Describe(config::Visitor& v) {
    v.Field("path", path, {.doc = "Hugging Face model directory (config.json + safetensors)"});
    v.Field("tokenizer", tokenizer, {.doc = "tokenizer.json or its directory; empty = path"});
    v.Field("dtype", dtype,
            {.doc = "weight dtype; auto = config.json torch_dtype. float16 computes in float32 on "
                    "CPU (no half matmul there)",
             .choices = {"auto", "float32", "bfloat16", "float16"}});
    v.Field("device", device, {.doc = "torch device: cpu, cuda, cuda:N"});
    v.Field("logprob_chunk_tokens", logprob_chunk_tokens,
            {.doc = "tokens per chunk when computing log-probs, bounding [tokens, vocab] memory",
             .min = 1});
    v.Field("packing", packing,
            {.doc = "training log-probs of a padded batch are computed with its sequences packed "
                    "several to a row (block-diagonal causal mask), skipping the padding"});
    v.Field("gradient_checkpointing", gradient_checkpointing,
            {.doc = "training recomputes each decoder layer in backward instead of keeping its "
                    "activations (less memory, one more forward)"});
    v.Field("checkpoint_layers", checkpoint_layers,
            {.doc = "with gradient_checkpointing: recompute only the first N decoder layers and "
                    "keep the others' activations (-1 = all layers; more memory, less recompute)",
             .min = -1.0});
  }
};

// `lora:` in a recipe. Field names follow PEFT's LoraConfig.
struct LoraConfig {
  bool enabled = true;
  int64_t r = 16;  // R2-Reasoner / CogER recipes use r = 16 (notes.md)
  double lora_alpha = 32.0;
  double lora_dropout = 0.05;
  bool use_rslora = false;  // scale alpha / sqrt(r) instead of alpha / r (Kalajdzievski 2023)
  std::vector<std::string> target_modules = {"q_proj",    "k_proj",  "v_proj",   "o_proj",
                                             "gate_proj", "up_proj", "down_proj"};
  std::string init_from;  // an existing PEFT adapter directory to start from
  int64_t seed = 0;       // lora_A initialisation

  void Describe(config::Visitor& v) {
    v.Field("enabled", enabled, {.doc = "train a LoRA adapter instead of all weights"});
    v.Field("r", r, {.doc = "LoRA rank", .min = 1});
    v.Field("lora_alpha", lora_alpha, {.doc = "LoRA alpha (scale alpha / r)", .min = 0.0});
    v.Field("lora_dropout", lora_dropout,
            {.doc = "dropout on the LoRA input", .min = 0.0, .max = 1.0});
    v.Field("use_rslora", use_rslora, {.doc = "rank-stabilised scale alpha / sqrt(r)"});
    v.Field("target_modules", target_modules,
            {.doc = "projections to adapt: q_proj k_proj v_proj o_proj gate_proj up_proj "
                    "down_proj (short forms q, k, v, o, gate, up, down; or all-linear)"});
    v.Field("init_from", init_from,
            {.doc = "PEFT adapter directory to continue; r, lora_alpha, lora_dropout, "
                    "use_rslora and target_modules must be the adapter's"});
    v.Field("seed", seed, {.doc = "seed of the lora_A initialisation"});
  }
};

}  // namespace allot::models
