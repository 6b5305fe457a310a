#include "trainer/export/policy_export.h"

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <set>

#include "core/atomic_file.h"
#include "core/checkpoint_store.h"
#include "models/peft.h"
#include "models/weights_io.h"
#include "trainer/export/policy_checkpoint.h"

namespace allot::trainer {
namespace fs = std::filesystem;

const std::vector<std::string>& TokenizerFileNames() {
  static const std::vector<std::string> kNames = {"tokenizer.json",
                                                  "tokenizer_config.json",
                                                  "special_tokens_map.json",
                                                  "added_tokens.json",
                                                  "vocab.json",
                                                  "merges.txt",
                                                  "tokenizer.model",
                                                  "chat_template.jinja",
                                                  "chat_template.json",
                                                  "generation_config.json"};
  return kNames;
}

Result<std::string> ResolvePolicyCheckpoint(const std::string& run) {
  std::error_code ec;
  fs::path path = fs::path(run).lexically_normal();
  if (path.filename().empty()) path = path.parent_path();  // "run/" -> "run"
  if (!fs::is_directory(path, ec)) return NotFound("export: no directory " + run);
  if (fs::exists(path / "policy.json", ec)) return path.parent_path().string();
  if (HasPolicyCheckpoint(path.string())) return path.string();
  const fs::path checkpoints = path / "checkpoints";
  if (!fs::is_directory(checkpoints, ec)) {
    return NotFound("export: " + run + " is neither a run directory (no checkpoints/) nor a " +
                    "checkpoint with a policy/ directory");
  }
  CheckpointStore store(checkpoints.string(), /*keep_last=*/0);
  std::vector<std::string> skipped;
  auto latest = store.LoadLatest(&skipped);
  if (!latest.ok()) return latest.status().Annotate("export: " + run);
  return latest->path;
}

namespace {

// The base's config.json with torch_dtype set to what was written, so that fields allot does not
// model (architectures, rope_scaling, sliding_window, ...) reach the export unchanged.
Status WriteConfigFromBase(const std::string& base_dir, const std::string& out,
                           const std::string& dtype) {
  const std::string base_config = (fs::path(base_dir) / "config.json").string();
  std::string text;
  if (!ReadFile(base_config, &text).ok()) return Status::Ok();  // keep SaveMerged's config.json
  nlohmann::json config = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!config.is_object()) return DataLoss(base_config + ": not a JSON object");
  config["torch_dtype"] = dtype;
  return WriteFileAtomic((fs::path(out) / "config.json").string(), config.dump(2) + "\n");
}

Status CopyTokenizer(const std::string& tokenizer, const std::string& base_dir,
                     const std::string& out) {
  std::error_code ec;
  std::vector<fs::path> sources;
  if (!tokenizer.empty() && fs::is_regular_file(tokenizer, ec)) {
    sources.push_back(tokenizer);  // a tokenizer.json given as a file
  }
  for (const std::string& dir : {tokenizer, base_dir}) {
    if (dir.empty() || !fs::is_directory(dir, ec)) continue;
    for (const std::string& name : TokenizerFileNames()) {
      const fs::path p = fs::path(dir) / name;
      if (fs::is_regular_file(p, ec)) sources.push_back(p);
    }
  }
  bool has_tokenizer = false;
  std::set<std::string> copied;  // the tokenizer's own files win over the base model's
  for (const fs::path& src : sources) {
    if (!copied.insert(src.filename().string()).second) continue;
    const fs::path dst = fs::path(out) / src.filename();
    fs::copy_file(src, dst, fs::copy_options::overwrite_existing, ec);
    if (ec) return Internal("copy " + src.string() + " to " + dst.string() + ": " + ec.message());
    if (src.filename() == "tokenizer.json" || src.filename() == "tokenizer.model" ||
        src.filename() == "vocab.json") {
      has_tokenizer = true;
    }
  }
  if (!has_tokenizer) {
    return NotFound(
        "export --format merged: no tokenizer files (tokenizer.json, vocab.json, "
        "tokenizer.model) in " +
        (tokenizer.empty() ? base_dir : tokenizer) +
        (tokenizer.empty() || tokenizer == base_dir ? "" : " or " + base_dir));
  }
  return Status::Ok();
}

}  // namespace

Result<std::string> ExportPolicy(const std::string& checkpoint_dir,
                                 const PolicyExportOptions& options) {
  if (options.format != "peft" && options.format != "merged") {
    return InvalidArgument("export --format " + options.format + ": expected peft | merged");
  }
  if (options.out.empty()) return InvalidArgument("export: no output directory");
  ALLOT_ASSIGN_OR_RETURN(PolicyCheckpointInfo info, ReadPolicyCheckpoint(checkpoint_dir));
  if (options.format == "peft" && info.format != PolicyFormat::kAdapter) {
    return InvalidArgument("export --format peft: " + info.dir +
                           " holds full weights (the run trained without LoRA); use --format "
                           "merged");
  }
  // Loading the policy checks that the adapter fits the base model before anything is written.
  models::LoadOptions load;
  load.dtype = info.dtype.empty() ? "auto" : info.dtype;
  if (info.format == PolicyFormat::kAdapter && info.base_model.empty() &&
      options.base_model.empty()) {
    return InvalidArgument("export: " + info.dir + " names no base model; pass --base-model");
  }
  ALLOT_ASSIGN_OR_RETURN(auto model,
                         LoadPolicyCheckpoint(checkpoint_dir, load, options.base_model));
  const std::string base = options.base_model.empty() ? info.base_model : options.base_model;
  std::error_code ec;
  fs::create_directories(options.out, ec);
  if (ec) return Internal("create " + options.out + ": " + ec.message());
  if (options.format == "peft") {
    ALLOT_RETURN_IF_ERROR(models::SaveAdapter(*model, options.out, base));
    return options.out;
  }
  ALLOT_RETURN_IF_ERROR(model->SaveMerged(options.out, options.dtype));
  std::string written = options.dtype;
  if (written == "auto") {
    written = models::DtypeName(model->dtype());
  } else {
    ALLOT_ASSIGN_OR_RETURN(auto type, models::ParseDtypeName(written));
    written = models::DtypeName(type);
  }
  const std::string config_source = info.format == PolicyFormat::kFull ? info.dir : base;
  ALLOT_RETURN_IF_ERROR(WriteConfigFromBase(config_source, options.out, written));
  ALLOT_RETURN_IF_ERROR(CopyTokenizer(info.tokenizer, base, options.out));
  return options.out;
}

}  // namespace allot::trainer
