#include "models/peft.h"

#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/atomic_file.h"
#include "core/safetensors.h"
#include "models/weights_io.h"

namespace allot::models {
namespace {

using Json = nlohmann::json;

constexpr const char* kPeftPrefix = "base_model.model.";

}  // namespace

std::string PeftTensorName(const std::string& site_path, char which) {
  return std::string(kPeftPrefix) + site_path + ".lora_" + which + ".weight";
}

std::string AdapterConfigJson(const AdapterConfig& config) {
  // The keys PEFT 0.1x writes for a plain LoRA adapter, so that PEFT and vLLM read it as theirs.
  Json j;
  j["alpha_pattern"] = Json::object();
  j["auto_mapping"] = nullptr;
  j["base_model_name_or_path"] = config.base_model_name_or_path;
  j["bias"] = "none";
  j["fan_in_fan_out"] = false;
  j["inference_mode"] = true;
  j["init_lora_weights"] = true;
  j["layers_pattern"] = nullptr;
  j["layers_to_transform"] = nullptr;
  j["lora_alpha"] = config.spec.alpha;
  j["lora_dropout"] = config.spec.dropout;
  j["modules_to_save"] = nullptr;
  j["peft_type"] = "LORA";
  j["r"] = config.spec.r;
  j["rank_pattern"] = Json::object();
  j["revision"] = nullptr;
  j["target_modules"] = config.target_modules;
  j["task_type"] = "CAUSAL_LM";
  j["use_dora"] = false;
  j["use_rslora"] = config.spec.use_rslora;
  return j.dump(2) + "\n";
}

Result<AdapterConfig> ParseAdapterConfig(const std::string& json_text, const std::string& source) {
  Json j = Json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return InvalidArgument(source + ": not a JSON object");
  }
  auto field = [&](const char* key) -> const Json* {
    auto it = j.find(key);
    return it == j.end() || it->is_null() ? nullptr : &*it;
  };
  auto bad = [&](const std::string& key, const std::string& what) {
    return InvalidArgument(source + ": field '" + key + "' " + what);
  };
  AdapterConfig c;
  const Json* peft_type = field("peft_type");
  if (peft_type == nullptr || *peft_type != "LORA") return bad("peft_type", "must be \"LORA\"");
  const Json* r = field("r");
  if (r == nullptr || !r->is_number_integer() || r->get<int64_t>() <= 0) {
    return bad("r", "must be a positive integer");
  }
  c.spec.r = r->get<int64_t>();
  const Json* alpha = field("lora_alpha");
  if (alpha == nullptr || !alpha->is_number()) return bad("lora_alpha", "must be a number");
  c.spec.alpha = alpha->get<double>();
  if (const Json* d = field("lora_dropout")) {
    if (!d->is_number()) return bad("lora_dropout", "must be a number");
    c.spec.dropout = d->get<double>();
  }
  if (const Json* rs = field("use_rslora")) {
    if (!rs->is_boolean()) return bad("use_rslora", "must be true or false");
    c.spec.use_rslora = rs->get<bool>();
  }
  if (const Json* b = field("bias"); b != nullptr && *b != "none") {
    return bad("bias", "must be \"none\" (LoRA biases are not supported)");
  }
  if (const Json* d = field("use_dora"); d != nullptr && *d != false) {
    return bad("use_dora", "DoRA is not supported");
  }
  if (const Json* m = field("modules_to_save"); m != nullptr && !m->empty()) {
    return bad("modules_to_save", "is not supported");
  }
  if (const Json* f = field("fan_in_fan_out"); f != nullptr && *f != false) {
    return bad("fan_in_fan_out", "is not supported");
  }
  for (const char* key : {"rank_pattern", "alpha_pattern"}) {
    if (const Json* p = field(key); p != nullptr && !p->empty())
      return bad(key, "is not supported");
  }
  const Json* targets = field("target_modules");
  std::vector<std::string> names;
  if (targets != nullptr && targets->is_string()) {
    names.push_back(targets->get<std::string>());  // "all-linear"; regexes are not supported
  } else if (targets != nullptr && targets->is_array()) {
    for (const auto& t : *targets) {
      if (!t.is_string()) return bad("target_modules", "must hold strings");
      names.push_back(t.get<std::string>());
    }
  } else {
    return bad("target_modules", "must be a list of module names");
  }
  auto kinds = ResolveTargetModules(names);
  if (!kinds.ok()) return InvalidArgument(source + ": " + kinds.status().message());
  c.target_modules = *kinds;
  if (const Json* base = field("base_model_name_or_path"); base != nullptr && base->is_string()) {
    c.base_model_name_or_path = base->get<std::string>();
  }
  return c;
}

Status SaveAdapter(const CausalLMImpl& model, const std::string& dir,
                   const std::string& base_model_name_or_path) {
  AdapterConfig config;
  config.base_model_name_or_path = base_model_name_or_path;
  NamedTensors tensors;
  std::set<std::string> kinds;
  for (const auto& site : model.linear_sites()) {
    if (!site.linear->has_lora()) continue;
    config.spec = site.linear->lora_spec();
    kinds.insert(site.kind);
    tensors.emplace_back(PeftTensorName(site.path, 'A'), site.linear->lora_A);
    tensors.emplace_back(PeftTensorName(site.path, 'B'), site.linear->lora_B);
  }
  if (tensors.empty()) return InvalidArgument("saving adapter to " + dir + ": model has no LoRA");
  auto ordered = ResolveTargetModules({kinds.begin(), kinds.end()});
  if (!ordered.ok()) return ordered.status();
  config.target_modules = *ordered;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return InvalidArgument(dir + ": cannot create directory (" + ec.message() + ")");
  ALLOT_RETURN_IF_ERROR(
      WriteTensors(dir + "/adapter_model.safetensors", tensors, {{"format", "pt"}}));
  return WriteFileAtomic(dir + "/adapter_config.json", AdapterConfigJson(config));
}

Result<AdapterConfig> LoadAdapter(CausalLMImpl& model, const std::string& dir) {
  const std::string config_path = dir + "/adapter_config.json";
  std::string text;
  if (Status s = ReadFile(config_path, &text); !s.ok()) {
    return NotFound(config_path + ": cannot read adapter config (" + s.message() + ")");
  }
  ALLOT_ASSIGN_OR_RETURN(AdapterConfig config, ParseAdapterConfig(text, config_path));
  const std::string weights_path = dir + "/adapter_model.safetensors";
  auto file = safetensors::File::Open(weights_path);
  if (!file.ok()) return file.status();
  ALLOT_RETURN_IF_ERROR(model.AttachLora(config.spec, config.target_modules));
  std::set<std::string> used;
  for (const auto& site : model.linear_sites()) {
    if (!site.linear->has_lora()) continue;
    for (char which : {'A', 'B'}) {
      const std::string name = PeftTensorName(site.path, which);
      const safetensors::TensorInfo* info = (*file)->Find(name);
      if (info == nullptr) {
        model.DetachLora();
        return NotFound(weights_path + ": missing tensor '" + name + "'");
      }
      at::Tensor dst = which == 'A' ? site.linear->lora_A : site.linear->lora_B;
      if (info->shape != dst.sizes().vec()) {
        model.DetachLora();
        return InvalidArgument(weights_path + ": tensor '" + name + "' has shape " +
                               c10::str(c10::IntArrayRef(info->shape)) + ", expected " +
                               c10::str(dst.sizes()));
      }
      auto t = ReadTensor(**file, *info);
      if (!t.ok()) {
        model.DetachLora();
        return t.status();
      }
      torch::NoGradGuard no_grad;
      dst.copy_(*t);
      used.insert(name);
    }
  }
  for (const auto& info : (*file)->tensors()) {
    if (!used.count(info.name)) {
      model.DetachLora();
      return InvalidArgument(weights_path + ": tensor '" + info.name +
                             "' does not match any adapted module of this model");
    }
  }
  return config;
}

Status ApplyLoraConfig(CausalLMImpl& model, const LoraConfig& config) {
  if (!config.enabled) return Status::Ok();
  if (!config.init_from.empty()) {
    auto loaded = LoadAdapter(model, config.init_from);
    if (!loaded.ok()) return loaded.status().Annotate("lora.init_from");
    // init_from continues that adapter as it was trained: a rank, scale or dropout the recipe
    // sets otherwise would be silently ignored, so it must agree.
    const LoraSpec& s = loaded->spec;
    auto differs = [&](const std::string& field, auto recipe, auto adapter) {
      std::ostringstream m;
      m << std::boolalpha << "lora." << field << ": " << recipe << ", but the adapter in "
        << "lora.init_from (" << config.init_from << ") has " << adapter
        << "; init_from continues that adapter, so set lora." << field << " to " << adapter;
      return InvalidArgument(m.str());
    };
    if (config.r != s.r) return differs("r", config.r, s.r);
    if (config.lora_alpha != s.alpha) return differs("lora_alpha", config.lora_alpha, s.alpha);
    if (config.lora_dropout != s.dropout) {
      return differs("lora_dropout", config.lora_dropout, s.dropout);
    }
    if (config.use_rslora != s.use_rslora) {
      return differs("use_rslora", config.use_rslora, s.use_rslora);
    }
    ALLOT_ASSIGN_OR_RETURN(std::vector<std::string> targets,
                           ResolveTargetModules(config.target_modules));
    if (targets != loaded->target_modules) {
      auto list = [](const std::vector<std::string>& v) {
        std::string out = "[";
        for (const std::string& t : v) out += (out.size() > 1 ? ", " : "") + t;
        return out + "]";
      };
      return differs("target_modules", list(targets), list(loaded->target_modules));
    }
    return Status::Ok();
  }
  LoraSpec spec;
  spec.r = config.r;
  spec.alpha = config.lora_alpha;
  spec.dropout = config.lora_dropout;
  spec.use_rslora = config.use_rslora;
  return model.AttachLora(spec, config.target_modules, static_cast<uint64_t>(config.seed));
}

}  // namespace allot::models
