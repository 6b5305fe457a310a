#include "trainer/export/policy_checkpoint.h"

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <filesystem>

#include "core/atomic_file.h"
#include "models/peft.h"
#include "models/weights_io.h"

namespace allot::trainer {
namespace fs = std::filesystem;

namespace {

std::string Absolute(const std::string& path) {
  if (path.empty()) return path;
  std::error_code ec;
  const fs::path abs = fs::absolute(path, ec);
  return ec ? path : abs.lexically_normal().string();
}

}  // namespace

Status SavePolicyCheckpoint(const models::CausalLMImpl& model, const std::string& checkpoint_dir,
                            const std::string& base_model, const std::string& tokenizer) {
  const std::string dir = (fs::path(checkpoint_dir) / kPolicyDirName).string();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Internal("create " + dir + ": " + ec.message());
  const bool adapter = model.has_lora();
  nlohmann::json meta = {{"format", adapter ? "adapter" : "full"},
                         {"base_model", Absolute(base_model)},
                         {"tokenizer", Absolute(tokenizer)},
                         {"dtype", models::DtypeName(model.dtype())}};
  if (adapter) {
    ALLOT_RETURN_IF_ERROR(models::SaveAdapter(model, dir, Absolute(base_model)));
  } else {
    ALLOT_RETURN_IF_ERROR(model.SaveMerged(dir));
  }
  return WriteFileAtomic(dir + "/policy.json", meta.dump(2) + "\n");
}

namespace {

// A PEFT directory: the base model is the one its adapter_config.json names.
Result<PolicyCheckpointInfo> ReadPeftDirectory(const std::string& dir) {
  const std::string path = dir + "/adapter_config.json";
  std::string text;
  ALLOT_RETURN_IF_ERROR(ReadFile(path, &text));
  ALLOT_ASSIGN_OR_RETURN(models::AdapterConfig config, models::ParseAdapterConfig(text, path));
  PolicyCheckpointInfo info;
  info.format = PolicyFormat::kAdapter;
  info.base_model = config.base_model_name_or_path;
  info.dtype = "auto";
  info.dir = dir;
  return info;
}

}  // namespace

bool HasPolicyCheckpoint(const std::string& dir) {
  std::error_code ec;
  const fs::path p(dir);
  return fs::exists(p / kPolicyDirName / "policy.json", ec) ||
         fs::exists(p / "adapter" / "adapter_config.json", ec) ||
         fs::exists(p / "adapter_config.json", ec);
}

Result<PolicyCheckpointInfo> ReadPolicyCheckpoint(const std::string& checkpoint_dir) {
  PolicyCheckpointInfo info;
  info.dir = (fs::path(checkpoint_dir) / kPolicyDirName).string();
  const std::string path = info.dir + "/policy.json";
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    for (const fs::path& peft : {fs::path(checkpoint_dir) / "adapter", fs::path(checkpoint_dir)}) {
      if (fs::exists(peft / "adapter_config.json", ec)) return ReadPeftDirectory(peft.string());
    }
  }
  std::string text;
  if (Status s = ReadFile(path, &text); !s.ok()) {
    // Alternating GRPO (R2-Reasoner Sec. 4.3) keeps one adapter per role: each is a policy.
    std::string roles;
    for (const auto& e : fs::directory_iterator(fs::path(checkpoint_dir) / "adapters", ec)) {
      if (fs::exists(e.path() / "adapter_config.json", ec)) {
        roles += (roles.empty() ? "" : ", ") + e.path().string();
      }
    }
    if (!roles.empty()) {
      return NotFound(checkpoint_dir +
                      ": holds one adapter per role, not one policy; export one of " + roles);
    }
    return NotFound(path + ": no policy in this checkpoint (" + s.message() +
                    "; nor a PEFT adapter/ directory)");
  }
  nlohmann::json meta = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!meta.is_object()) return DataLoss(path + ": not a JSON object");
  auto field = [&](const char* name, std::string* out) -> Status {
    if (!meta.contains(name)) return DataLoss(path + ": missing field '" + name + "'");
    if (!meta[name].is_string()) return DataLoss(path + ": field '" + name + "' is not a string");
    *out = meta[name].get<std::string>();
    return Status::Ok();
  };
  std::string format;
  ALLOT_RETURN_IF_ERROR(field("format", &format));
  ALLOT_RETURN_IF_ERROR(field("base_model", &info.base_model));
  ALLOT_RETURN_IF_ERROR(field("dtype", &info.dtype));
  if (meta.contains("tokenizer")) ALLOT_RETURN_IF_ERROR(field("tokenizer", &info.tokenizer));
  if (format == "adapter") {
    info.format = PolicyFormat::kAdapter;
  } else if (format == "full") {
    info.format = PolicyFormat::kFull;
  } else {
    return DataLoss(path + ": field 'format' is '" + format + "' (expected adapter | full)");
  }
  return info;
}

Result<std::shared_ptr<models::CausalLMImpl>> LoadPolicyCheckpoint(
    const std::string& checkpoint_dir, const models::LoadOptions& options,
    const std::string& base_model) {
  ALLOT_ASSIGN_OR_RETURN(PolicyCheckpointInfo info, ReadPolicyCheckpoint(checkpoint_dir));
  if (info.format == PolicyFormat::kFull) return models::CausalLMImpl::Load(info.dir, options);
  const std::string base = base_model.empty() ? info.base_model : base_model;
  if (base.empty()) {
    return InvalidArgument(info.dir + "/policy.json: no base_model recorded; pass the base model");
  }
  auto model = models::CausalLMImpl::Load(base, options);
  if (!model.ok()) {
    return model.status().Annotate("base model of the adapter in " + info.dir);
  }
  auto adapter = models::LoadAdapter(**model, info.dir);
  if (!adapter.ok()) return adapter.status();
  return *model;
}

}  // namespace allot::trainer
