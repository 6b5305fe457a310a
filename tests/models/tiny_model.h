// Writes a tiny randomly initialised Hugging Face checkpoint (config.json + model.safetensors)
// for the causal LM tests. Tensor names are spelled out here, independently of the model code,
// so that a naming mistake in CausalLM shows up as a load failure.
#pragma once

#include <cstdint>
#include <string>

namespace allot::models::testing {

struct TinyModelOptions {
  std::string model_type = "qwen2";
  int64_t vocab_size = 64;
  int64_t hidden_size = 32;
  int64_t intermediate_size = 48;
  int64_t num_layers = 2;
  int64_t num_heads = 4;
  int64_t num_kv_heads = 2;
  bool tie_word_embeddings = false;
  bool rope_parameters_spelling = false;  // write rope_parameters.rope_theta
  double rope_theta = 10000.0;
  uint32_t seed = 1;
  std::string skip_tensor;  // leave this tensor out (error tests)
};

// A fresh empty directory under the system temp dir.
std::string MakeTempDir(const std::string& name);

// Writes the checkpoint into `dir` and returns `dir`.
std::string WriteTinyModel(const std::string& dir, const TinyModelOptions& options = {});

}  // namespace allot::models::testing
