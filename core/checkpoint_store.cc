#include "core/checkpoint_store.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "core/atomic_file.h"
#include "core/sha256.h"

namespace allot {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kManifest = "manifest.json";
constexpr const char* kFormat = "allot-checkpoint/1";

bool ParseStepDir(const std::string& name, int64_t* step) {
  if (name.rfind("step-", 0) != 0 || name.size() <= 5) return false;
  int64_t v = 0;
  for (size_t i = 5; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return false;
    if (v > (INT64_MAX - 9) / 10) return false;
    v = v * 10 + (name[i] - '0');
  }
  *step = v;
  return true;
}

std::string UniqueSuffix() {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%d-%08llx", static_cast<int>(::getpid()),
                static_cast<unsigned long long>(rng() & 0xffffffffull));
  return buf;
}

}  // namespace

CheckpointStore::CheckpointStore(std::string dir, int keep_last)
    : dir_(std::move(dir)), keep_last_(keep_last) {}

std::string CheckpointStore::StepDirName(int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "step-%012lld", static_cast<long long>(step));
  return buf;
}

std::vector<int64_t> CheckpointStore::Steps() const {
  std::vector<int64_t> steps;
  std::error_code ec;
  if (!fs::is_directory(dir_, ec)) return steps;
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    int64_t s;
    if (e.is_directory() && ParseStepDir(e.path().filename().string(), &s)) steps.push_back(s);
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

void CheckpointStore::RemoveStale() const {
  // Staging and trash directories left by a process that died mid-save or mid-delete.
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(".staging-", 0) == 0 || name.rfind(".trash-", 0) == 0) {
      fs::remove_all(e.path(), ec);
    }
  }
}

Result<std::string> CheckpointStore::Save(
    int64_t step, const std::function<Status(const std::string&)>& write) {
  if (step < 0) return InvalidArgument("checkpoint step must be >= 0");
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return Internal("create " + dir_ + ": " + ec.message());
  RemoveStale();

  const fs::path staging = fs::path(dir_) / (".staging-" + UniqueSuffix());
  fs::create_directory(staging, ec);
  if (ec) return Internal("create " + staging.string() + ": " + ec.message());
  auto fail = [&](const Status& s) {
    std::error_code ignored;
    fs::remove_all(staging, ignored);
    return s.Annotate("saving checkpoint step " + std::to_string(step));
  };

  if (Status s = write(staging.string()); !s.ok()) return fail(s);

  json files = json::object();
  for (auto it = fs::recursive_directory_iterator(staging, ec); it != fs::end(it);
       it.increment(ec)) {
    if (ec) return fail(Internal("listing " + staging.string() + ": " + ec.message()));
    if (!it->is_regular_file()) continue;
    const std::string rel = fs::relative(it->path(), staging).string();
    if (rel == kManifest) return fail(InvalidArgument("a checkpoint file may not be named " +
                                                      std::string(kManifest)));
    if (Status s = FsyncPath(it->path().string()); !s.ok()) return fail(s);
    auto digest = Sha256File(it->path().string());
    if (!digest.ok()) return fail(digest.status());
    files[rel] = {{"sha256", *digest}, {"bytes", fs::file_size(it->path())}};
  }
  json manifest = {{"format", kFormat},
                   {"allot_version", ALLOT_VERSION},
                   {"step", step},
                   {"created_unix", std::chrono::duration_cast<std::chrono::seconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count()},
                   {"files", files}};
  if (Status s = WriteFileAtomic((staging / kManifest).string(), manifest.dump(2) + "\n");
      !s.ok()) {
    return fail(s);
  }
  if (Status s = FsyncPath(staging.string()); !s.ok()) return fail(s);

  const fs::path final_dir = fs::path(dir_) / StepDirName(step);
  if (fs::exists(final_dir)) {
    // Re-saving a step: move the old one aside first; rename over a non-empty dir fails.
    const fs::path trash = fs::path(dir_) / (".trash-" + UniqueSuffix());
    fs::rename(final_dir, trash, ec);
    if (ec) return fail(Internal("rename " + final_dir.string() + ": " + ec.message()));
    fs::remove_all(trash, ec);
  }
  fs::rename(staging, final_dir, ec);
  if (ec) return fail(Internal("rename to " + final_dir.string() + ": " + ec.message()));
  if (Status s = FsyncPath(dir_); !s.ok()) return s;
  ApplyRetention();
  return final_dir.string();
}

void CheckpointStore::ApplyRetention() {
  if (keep_last_ <= 0) return;
  std::vector<int64_t> steps = Steps();
  if (steps.size() <= static_cast<size_t>(keep_last_)) return;
  const size_t drop = steps.size() - static_cast<size_t>(keep_last_);
  for (size_t i = 0; i < drop; ++i) {
    // Rename first so that a crash mid-delete never leaves a half-deleted step-N behind.
    std::error_code ec;
    const fs::path victim = fs::path(dir_) / StepDirName(steps[i]);
    const fs::path trash = fs::path(dir_) / (".trash-" + UniqueSuffix());
    fs::rename(victim, trash, ec);
    if (!ec) fs::remove_all(trash, ec);
  }
}

Result<CheckpointManifest> ParseCheckpointManifest(std::string_view text,
                                                   const std::string& where) {
  const json m = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (m.is_discarded()) return DataLoss(where + ": not valid JSON");
  // Every field is type-checked before it is read: nlohmann's value() and get() throw on a
  // wrong type, and a manifest is data from disk, so a wrong type must skip the checkpoint.
  const auto is_string = [&m](const char* key) { return m.contains(key) && m[key].is_string(); };
  if (!m.is_object() || !is_string("format") || m["format"].get<std::string>() != kFormat ||
      !m.contains("step") || !m["step"].is_number_integer() || !m.contains("files") ||
      !m["files"].is_object()) {
    return DataLoss(where + ": not an allot checkpoint manifest");
  }
  if (m.contains("allot_version") && !m["allot_version"].is_string()) {
    return DataLoss(where + ": allot_version: expected a string, got " + m["allot_version"].dump());
  }
  CheckpointManifest manifest;
  manifest.step = m["step"].get<int64_t>();
  manifest.allot_version = is_string("allot_version") ? m["allot_version"].get<std::string>() : "";
  for (const auto& [rel, entry] : m["files"].items()) {
    if (rel.empty() || rel.find("..") != std::string::npos || rel[0] == '/') {
      return DataLoss(where + ": file name '" + rel + "' escapes the checkpoint");
    }
    if (!entry.is_object() || !entry.contains("bytes") || !entry["bytes"].is_number_unsigned() ||
        !entry.contains("sha256") || !entry["sha256"].is_string()) {
      return DataLoss(where + ": files[\"" + rel +
                      "\"]: expected {\"sha256\": string, \"bytes\": unsigned integer}, got " +
                      entry.dump());
    }
    manifest.files.push_back(
        {rel, entry["sha256"].get<std::string>(), entry["bytes"].get<uint64_t>()});
  }
  return manifest;
}

Result<CheckpointInfo> CheckpointStore::Verify(const std::string& step_dir) const {
  std::string text;
  const std::string manifest_path = (fs::path(step_dir) / kManifest).string();
  if (Status s = ReadFile(manifest_path, &text); !s.ok()) return DataLoss(s.message());
  ALLOT_ASSIGN_OR_RETURN(CheckpointManifest m, ParseCheckpointManifest(text, manifest_path));
  CheckpointInfo info;
  info.step = m.step;
  info.path = step_dir;
  info.allot_version = m.allot_version;
  int64_t dir_step = -1;
  if (!ParseStepDir(fs::path(step_dir).filename().string(), &dir_step) || dir_step != info.step) {
    return DataLoss(manifest_path + ": step " + std::to_string(info.step) +
                    " does not match the directory name");
  }
  for (const CheckpointManifest::File& file : m.files) {
    const fs::path p = fs::path(step_dir) / file.name;
    std::error_code ec;
    const auto size = fs::file_size(p, ec);
    if (ec) return DataLoss(p.string() + ": missing");
    if (file.bytes != size) {
      return DataLoss(p.string() + ": size " + std::to_string(size) +
                      " does not match the manifest");
    }
    auto digest = Sha256File(p.string());
    if (!digest.ok()) return DataLoss(digest.status().message());
    if (*digest != file.sha256)
      return DataLoss(p.string() + ": sha256 does not match the manifest");
  }
  return info;
}

Result<CheckpointInfo> CheckpointStore::LoadLatest(std::vector<std::string>* skipped) const {
  std::vector<int64_t> steps = Steps();
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    const std::string path = (fs::path(dir_) / StepDirName(*it)).string();
    auto info = Verify(path);
    if (info.ok()) return info;
    spdlog::warn("skipping checkpoint {}: {}", path, info.status().message());
    if (skipped != nullptr) skipped->push_back(path + ": " + info.status().message());
  }
  return NotFound("no valid checkpoint in " + dir_);
}

}  // namespace allot
