#include "models/hf_config.h"

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"

namespace allot::models {
namespace {

using Json = nlohmann::json;

Status FieldError(const std::string& source, const std::string& field, const std::string& what) {
  return InvalidArgument(source + ": field '" + field + "' " + what);
}

// Reads an integer field; `required` fields must be present.
Status GetInt(const Json& j, const std::string& source, const std::string& field, bool required,
              int64_t* out) {
  auto it = j.find(field);
  if (it == j.end() || it->is_null()) {
    return required ? FieldError(source, field, "is missing") : Status::Ok();
  }
  if (!it->is_number_integer()) return FieldError(source, field, "must be an integer");
  *out = it->get<int64_t>();
  return Status::Ok();
}

Status GetDouble(const Json& j, const std::string& source, const std::string& field, double* out) {
  auto it = j.find(field);
  if (it == j.end() || it->is_null()) return Status::Ok();
  if (!it->is_number()) return FieldError(source, field, "must be a number");
  *out = it->get<double>();
  return Status::Ok();
}

Status GetBool(const Json& j, const std::string& source, const std::string& field, bool* out) {
  auto it = j.find(field);
  if (it == j.end() || it->is_null()) return Status::Ok();
  if (!it->is_boolean()) return FieldError(source, field, "must be true or false");
  *out = it->get<bool>();
  return Status::Ok();
}

}  // namespace

Status TransformerConfig::Validate(const std::string& source) const {
  auto positive = [&](const char* name, int64_t v) -> Status {
    if (v <= 0) return FieldError(source, name, "must be positive, got " + std::to_string(v));
    return Status::Ok();
  };
  ALLOT_RETURN_IF_ERROR(positive("vocab_size", vocab_size));
  ALLOT_RETURN_IF_ERROR(positive("hidden_size", hidden_size));
  ALLOT_RETURN_IF_ERROR(positive("intermediate_size", intermediate_size));
  ALLOT_RETURN_IF_ERROR(positive("num_hidden_layers", num_hidden_layers));
  ALLOT_RETURN_IF_ERROR(positive("num_attention_heads", num_attention_heads));
  ALLOT_RETURN_IF_ERROR(positive("num_key_value_heads", num_key_value_heads));
  ALLOT_RETURN_IF_ERROR(positive("head_dim", head_dim));
  if (num_attention_heads % num_key_value_heads != 0) {
    return FieldError(source, "num_key_value_heads",
                      "(" + std::to_string(num_key_value_heads) +
                          ") must divide num_attention_heads (" +
                          std::to_string(num_attention_heads) + ")");
  }
  if (head_dim % 2 != 0)
    return FieldError(source, "head_dim", "must be even for rotary embeddings");
  if (!(rms_norm_eps > 0)) return FieldError(source, "rms_norm_eps", "must be positive");
  if (!(rope_theta > 0)) return FieldError(source, "rope_theta", "must be positive");
  if (torch_dtype != "float32" && torch_dtype != "bfloat16" && torch_dtype != "float16") {
    return FieldError(source, "torch_dtype",
                      "must be float32, bfloat16 or float16, got '" + torch_dtype + "'");
  }
  return Status::Ok();
}

Result<TransformerConfig> ParseTransformerConfig(const std::string& json_text,
                                                 const std::string& source) {
  Json j = Json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgument(source + ": not valid JSON");
  if (!j.is_object()) return InvalidArgument(source + ": expected a JSON object");

  TransformerConfig c;
  auto mt = j.find("model_type");
  if (mt == j.end() || !mt->is_string()) {
    return FieldError(source, "model_type",
                      "is missing (expected \"qwen2\", \"qwen3\" or \"llama\")");
  }
  c.model_type = mt->get<std::string>();
  bool head_dim_default_128 = false;
  if (c.model_type == "qwen2") {
    c.family = ModelFamily::kQwen2;
    c.attention_bias = true;
  } else if (c.model_type == "qwen3") {
    // transformers' Qwen3Config defaults.
    c.family = ModelFamily::kQwen3;
    c.attention_bias = false;
    head_dim_default_128 = true;
  } else if (c.model_type == "llama") {
    c.family = ModelFamily::kLlama;
    c.attention_bias = false;
    c.rope_theta = 10000.0;
    c.rms_norm_eps = 1e-6;
    c.max_position_embeddings = 2048;
  } else {
    return FieldError(
        source, "model_type",
        "'" + c.model_type + "' is not supported (expected \"qwen2\", \"qwen3\" or \"llama\")");
  }

  ALLOT_RETURN_IF_ERROR(GetInt(j, source, "vocab_size", true, &c.vocab_size));
  ALLOT_RETURN_IF_ERROR(GetInt(j, source, "hidden_size", true, &c.hidden_size));
  ALLOT_RETURN_IF_ERROR(GetInt(j, source, "intermediate_size", true, &c.intermediate_size));
  ALLOT_RETURN_IF_ERROR(GetInt(j, source, "num_hidden_layers", true, &c.num_hidden_layers));
  ALLOT_RETURN_IF_ERROR(GetInt(j, source, "num_attention_heads", true, &c.num_attention_heads));
  c.num_key_value_heads = c.num_attention_heads;
  ALLOT_RETURN_IF_ERROR(GetInt(j, source, "num_key_value_heads", false, &c.num_key_value_heads));
  if (c.num_attention_heads > 0) c.head_dim = c.hidden_size / c.num_attention_heads;
  if (head_dim_default_128) c.head_dim = 128;
  ALLOT_RETURN_IF_ERROR(GetInt(j, source, "head_dim", false, &c.head_dim));
  ALLOT_RETURN_IF_ERROR(
      GetInt(j, source, "max_position_embeddings", false, &c.max_position_embeddings));
  ALLOT_RETURN_IF_ERROR(GetDouble(j, source, "rms_norm_eps", &c.rms_norm_eps));
  ALLOT_RETURN_IF_ERROR(GetDouble(j, source, "rope_theta", &c.rope_theta));
  // Newer transformers write rope_parameters: {"rope_theta": ..., "rope_type": "default"}.
  for (const char* key : {"rope_parameters", "rope_scaling"}) {
    auto rp = j.find(key);
    if (rp == j.end() || rp->is_null()) continue;
    if (!rp->is_object()) return FieldError(source, key, "must be an object");
    if (rp->contains("rope_theta")) {
      if (!(*rp)["rope_theta"].is_number()) {
        return FieldError(source, std::string(key) + ".rope_theta", "must be a number");
      }
      c.rope_theta = (*rp)["rope_theta"].get<double>();
    }
    auto type = rp->find("rope_type");
    if (type == rp->end()) type = rp->find("type");
    if (type != rp->end() && !(type->is_string() && type->get<std::string>() == "default")) {
      return FieldError(source, std::string(key) + ".rope_type",
                        "is " + type->dump() + "; only default RoPE is supported");
    }
  }
  ALLOT_RETURN_IF_ERROR(GetBool(j, source, "tie_word_embeddings", &c.tie_word_embeddings));
  if (c.family == ModelFamily::kQwen3) {
    ALLOT_RETURN_IF_ERROR(GetBool(j, source, "attention_bias", &c.attention_bias));
    bool sliding = false;
    ALLOT_RETURN_IF_ERROR(GetBool(j, source, "use_sliding_window", &sliding));
    if (sliding) return FieldError(source, "use_sliding_window", "true is not supported");
    if (auto lt = j.find("layer_types"); lt != j.end() && !lt->is_null()) {
      if (!lt->is_array()) return FieldError(source, "layer_types", "must be a list");
      for (const auto& t : *lt) {
        if (!(t.is_string() && t.get<std::string>() == "full_attention")) {
          return FieldError(source, "layer_types",
                            "holds " + t.dump() + "; only \"full_attention\" is supported");
        }
      }
    }
  }
  if (c.family == ModelFamily::kLlama) {
    ALLOT_RETURN_IF_ERROR(GetBool(j, source, "attention_bias", &c.attention_bias));
    bool mlp_bias = false;
    ALLOT_RETURN_IF_ERROR(GetBool(j, source, "mlp_bias", &mlp_bias));
    if (mlp_bias) return FieldError(source, "mlp_bias", "true is not supported");
  }
  for (const char* key : {"torch_dtype", "dtype"}) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) continue;
    if (!it->is_string()) return FieldError(source, key, "must be a string");
    c.torch_dtype = it->get<std::string>();
  }
  if (auto it = j.find("hidden_act");
      it != j.end() && !(it->is_string() && it->get<std::string>() == "silu")) {
    return FieldError(source, "hidden_act", "is " + it->dump() + "; only \"silu\" is supported");
  }
  if (auto it = j.find("eos_token_id"); it != j.end() && !it->is_null()) {
    if (it->is_number_integer()) {
      c.eos_token_ids.push_back(it->get<int64_t>());
    } else if (it->is_array()) {
      for (const auto& e : *it) {
        if (!e.is_number_integer()) {
          return FieldError(source, "eos_token_id", "must be an integer or a list of integers");
        }
        c.eos_token_ids.push_back(e.get<int64_t>());
      }
    } else {
      return FieldError(source, "eos_token_id", "must be an integer or a list of integers");
    }
  }
  ALLOT_RETURN_IF_ERROR(GetInt(j, source, "bos_token_id", false, &c.bos_token_id));
  ALLOT_RETURN_IF_ERROR(c.Validate(source));
  return c;
}

Result<TransformerConfig> LoadTransformerConfig(const std::string& model_dir) {
  const std::string path = model_dir + "/config.json";
  std::string text;
  Status s = ReadFile(path, &text);
  if (!s.ok()) return NotFound(path + ": cannot read model config (" + s.message() + ")");
  return ParseTransformerConfig(text, path);
}

std::string TransformerConfig::ToJson() const {
  Json j;
  const char* architecture = family == ModelFamily::kQwen2   ? "Qwen2ForCausalLM"
                             : family == ModelFamily::kQwen3 ? "Qwen3ForCausalLM"
                                                             : "LlamaForCausalLM";
  j["architectures"] = Json::array({architecture});
  j["model_type"] = model_type;
  j["vocab_size"] = vocab_size;
  j["hidden_size"] = hidden_size;
  j["intermediate_size"] = intermediate_size;
  j["num_hidden_layers"] = num_hidden_layers;
  j["num_attention_heads"] = num_attention_heads;
  j["num_key_value_heads"] = num_key_value_heads;
  j["head_dim"] = head_dim;
  j["hidden_act"] = "silu";
  j["rms_norm_eps"] = rms_norm_eps;
  j["rope_theta"] = rope_theta;
  j["max_position_embeddings"] = max_position_embeddings;
  j["tie_word_embeddings"] = tie_word_embeddings;
  j["torch_dtype"] = torch_dtype;
  if (family != ModelFamily::kQwen2) j["attention_bias"] = attention_bias;
  if (eos_token_ids.size() == 1) j["eos_token_id"] = eos_token_ids[0];
  if (eos_token_ids.size() > 1) j["eos_token_id"] = eos_token_ids;
  if (bos_token_id >= 0) j["bos_token_id"] = bos_token_id;
  return j.dump(2) + "\n";
}

}  // namespace allot::models
