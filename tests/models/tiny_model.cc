#include "tests/models/tiny_model.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include "core/safetensors.h"

namespace allot::models::testing {
namespace {

struct Stored {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;
};

}  // namespace

namespace {

// Removes the directories made by MakeTempDir when the test binary exits.
struct TempDirs {
  std::vector<std::filesystem::path> dirs;
  ~TempDirs() {
    std::error_code ec;
    for (const auto& d : dirs) std::filesystem::remove_all(d, ec);
  }
};
TempDirs temp_dirs;

}  // namespace

std::string MakeTempDir(const std::string& name) {
  static int counter = 0;
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("allot_" + name + "_" + std::to_string(getpid()) + "_" + std::to_string(counter++));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  temp_dirs.dirs.push_back(dir);
  return dir.string();
}

std::string WriteTinyModel(const std::string& dir, const TinyModelOptions& o) {
  std::mt19937 rng(o.seed);
  std::vector<Stored> tensors;
  auto add = [&](const std::string& name, std::vector<int64_t> shape, double mean, double std) {
    if (name == o.skip_tensor) return;
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::normal_distribution<float> dist(static_cast<float>(mean), static_cast<float>(std));
    Stored s{name, std::move(shape), std::vector<float>(n)};
    for (auto& v : s.values) v = dist(rng);
    tensors.push_back(std::move(s));
  };
  const int64_t h = o.hidden_size;
  const int64_t d = h / o.num_heads;
  const bool qkv_bias = o.model_type == "qwen2";
  const double w = 1.0 / std::sqrt(static_cast<double>(h));
  add("model.embed_tokens.weight", {o.vocab_size, h}, 0.0, 1.0);
  for (int64_t l = 0; l < o.num_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    add(p + "input_layernorm.weight", {h}, 1.0, 0.1);
    add(p + "post_attention_layernorm.weight", {h}, 1.0, 0.1);
    add(p + "self_attn.q_proj.weight", {o.num_heads * d, h}, 0.0, w);
    add(p + "self_attn.k_proj.weight", {o.num_kv_heads * d, h}, 0.0, w);
    add(p + "self_attn.v_proj.weight", {o.num_kv_heads * d, h}, 0.0, w);
    if (qkv_bias) {
      add(p + "self_attn.q_proj.bias", {o.num_heads * d}, 0.0, 0.1);
      add(p + "self_attn.k_proj.bias", {o.num_kv_heads * d}, 0.0, 0.1);
      add(p + "self_attn.v_proj.bias", {o.num_kv_heads * d}, 0.0, 0.1);
    }
    add(p + "self_attn.o_proj.weight", {h, o.num_heads * d}, 0.0, w);
    if (o.model_type == "qwen3") {
      add(p + "self_attn.q_norm.weight", {d}, 1.0, 0.2);
      add(p + "self_attn.k_norm.weight", {d}, 1.0, 0.2);
    }
    add(p + "mlp.gate_proj.weight", {o.intermediate_size, h}, 0.0, w);
    add(p + "mlp.up_proj.weight", {o.intermediate_size, h}, 0.0, w);
    add(p + "mlp.down_proj.weight", {h, o.intermediate_size}, 0.0,
        1.0 / std::sqrt(static_cast<double>(o.intermediate_size)));
  }
  add("model.norm.weight", {h}, 1.0, 0.1);
  if (!o.tie_word_embeddings) add("lm_head.weight", {o.vocab_size, h}, 0.0, w);

  std::vector<safetensors::TensorRef> refs;
  for (const auto& t : tensors) {
    refs.push_back({t.name, safetensors::Dtype::kF32, t.shape,
                    std::span<const std::byte>(reinterpret_cast<const std::byte*>(t.values.data()),
                                               t.values.size() * sizeof(float))});
  }
  Status s = safetensors::Write(dir + "/model.safetensors", refs, {{"format", "pt"}});
  EXPECT_TRUE(s.ok()) << s.ToString();

  std::ofstream config(dir + "/config.json");
  const char* architecture = qkv_bias                  ? "Qwen2ForCausalLM"
                             : o.model_type == "qwen3" ? "Qwen3ForCausalLM"
                                                       : "LlamaForCausalLM";
  config << "{\n  \"architectures\": [\"" << architecture << "\"],\n  \"model_type\": \""
         << o.model_type << "\",\n"
         << "  \"vocab_size\": " << o.vocab_size << ",\n  \"hidden_size\": " << h << ",\n"
         << "  \"intermediate_size\": " << o.intermediate_size << ",\n"
         << "  \"num_hidden_layers\": " << o.num_layers << ",\n"
         << "  \"num_attention_heads\": " << o.num_heads << ",\n"
         << "  \"num_key_value_heads\": " << o.num_kv_heads << ",\n"
         << "  \"head_dim\": " << d << ",\n"
         << "  \"hidden_act\": \"silu\",\n  \"rms_norm_eps\": 1e-06,\n"
         << "  \"max_position_embeddings\": 256,\n"
         << "  \"tie_word_embeddings\": " << (o.tie_word_embeddings ? "true" : "false") << ",\n";
  if (o.rope_parameters_spelling) {
    config << "  \"rope_parameters\": {\"rope_theta\": " << o.rope_theta
           << ", \"rope_type\": \"default\"},\n";
  } else {
    config << "  \"rope_theta\": " << o.rope_theta << ",\n";
  }
  config << "  \"eos_token_id\": " << (o.vocab_size - 1) << ",\n"
         << "  \"torch_dtype\": \"float32\"\n}\n";
  return dir;
}

}  // namespace allot::models::testing
