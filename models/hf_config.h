// The architecture part of a Hugging Face config.json for the Qwen2, Qwen3 and Llama families.
//
// All three are the same decoder: RMSNorm, rotate-half RoPE, grouped-query attention and a
// SwiGLU MLP. Qwen2 has q/k/v biases; Llama and Qwen3 have none unless `attention_bias` says so
// (then o_proj has one too). Qwen3 adds an RMSNorm over each head's query and key (q_norm,
// k_norm, weights [head_dim]) before RoPE, and its head_dim defaults to 128, not
// hidden_size / num_attention_heads. Qwen3's sliding-window layers are not supported.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace allot::models {

enum class ModelFamily { kQwen2, kQwen3, kLlama };

struct TransformerConfig {
  ModelFamily family = ModelFamily::kQwen2;
  std::string model_type = "qwen2";  // as written in config.json
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;
  int64_t head_dim = 0;  // hidden_size / num_attention_heads unless config.json sets it
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  int64_t max_position_embeddings = 32768;
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // q/k/v projections carry a bias (always for Qwen2)
  // Qwen3: RMSNorm of each head's query and key before RoPE.
  bool qk_norm() const { return family == ModelFamily::kQwen3; }
  std::string torch_dtype = "float32";  // "float32" | "bfloat16" | "float16"
  std::vector<int64_t> eos_token_ids;   // config.json eos_token_id (an int or a list)
  int64_t bos_token_id = -1;

  // Checks sizes and divisibility; `source` names the file in messages.
  Status Validate(const std::string& source) const;
  // config.json text in Hugging Face's layout (for export).
  std::string ToJson() const;
};

// Parses config.json text. `source` (the path) prefixes every message, with the field named.
Result<TransformerConfig> ParseTransformerConfig(const std::string& json_text,
                                                 const std::string& source);
// Reads DIR/config.json.
Result<TransformerConfig> LoadTransformerConfig(const std::string& model_dir);

}  // namespace allot::models
