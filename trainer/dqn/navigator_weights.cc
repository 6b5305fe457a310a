#include "trainer/dqn/navigator_weights.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <span>

#include "core/atomic_file.h"
#include "core/checkpoint_store.h"
#include "core/safetensors.h"
#include "envs/rlot/logic_block.h"

namespace allot::trainer {
namespace {

namespace fs = std::filesystem;

const char* const kNames[] = {"trunk.weight",        "trunk.bias",        "adv_hidden.weight",
                              "adv_hidden.bias",     "adv_out.weight",    "adv_out.bias",
                              "value_hidden.weight", "value_hidden.bias", "value_out.weight",
                              "value_out.bias"};

std::span<const std::byte> AsBytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

std::string FloatText(float v) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

}  // namespace

const NavigatorTensor* NavigatorWeights::Find(const std::string& name) const {
  for (const auto& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

int64_t NavigatorWeights::parameter_count() const {
  int64_t n = 0;
  for (const auto& t : tensors) n += static_cast<int64_t>(t.values.size());
  return n;
}

Result<std::string> NavigatorWeights::Serialize() const {
  std::vector<safetensors::TensorRef> refs;
  for (const auto& t : tensors) {
    refs.push_back({t.name, safetensors::Dtype::kF32, t.shape,
                    std::span<const std::byte>(reinterpret_cast<const std::byte*>(t.values.data()),
                                               t.values.size() * sizeof(float))});
  }
  return safetensors::Serialize(refs, {{"format", "allot-navigator/1"},
                                       {"input_offset", FloatText(shape.input_offset)},
                                       {"input_scale", FloatText(shape.input_scale)}});
}

Result<models::NavigatorMlp> NavigatorWeights::Mlp() const {
  ALLOT_ASSIGN_OR_RETURN(std::string bytes, Serialize());
  return models::NavigatorMlp::FromSafetensors(AsBytes(bytes), source);
}

Result<NavigatorWeights> ParseNavigatorWeights(const std::string& bytes,
                                               const std::string& source) {
  ALLOT_ASSIGN_OR_RETURN(safetensors::View view, safetensors::View::Parse(AsBytes(bytes), source));
  std::string prefix;
  if (view.Find("trunk.weight") == nullptr && view.Find("online.trunk.weight") != nullptr) {
    prefix = "online.";  // a checkpoint holds online.* and target.*; the online net acts
  }
  NavigatorWeights w;
  w.source = source;
  for (const char* name : kNames) {
    const safetensors::TensorInfo* t = view.Find(prefix + name);
    if (t == nullptr) return InvalidArgument(source + ": missing tensor '" + prefix + name + "'");
    if (t->dtype != safetensors::Dtype::kF32) {
      return InvalidArgument(source + ": tensor '" + prefix + name + "' must be F32");
    }
    NavigatorTensor out;
    out.name = name;
    out.shape = t->shape;
    auto data = view.Data(*t);
    out.values.resize(data.size() / sizeof(float));
    std::memcpy(out.values.data(), data.data(), out.values.size() * sizeof(float));
    w.tensors.push_back(std::move(out));
  }
  // The input scaling lives in the metadata (default 1.5 / 1.5).
  auto meta = view.metadata();
  for (const char* key : {"input_offset", "input_scale"}) {
    auto it = meta.find(key);
    if (it == meta.end()) continue;
    float v = 0;
    auto r = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
    if (r.ec != std::errc() || !std::isfinite(v)) {
      return InvalidArgument(source + ": metadata " + key + " = '" + it->second +
                             "' is not a number");
    }
    (std::string(key) == "input_offset" ? w.shape.input_offset : w.shape.input_scale) = v;
  }
  // Re-serialise canonically and let NavigatorMlp check every shape.
  ALLOT_ASSIGN_OR_RETURN(std::string canonical, w.Serialize());
  ALLOT_ASSIGN_OR_RETURN(models::NavigatorMlp mlp,
                         models::NavigatorMlp::FromSafetensors(AsBytes(canonical), source));
  w.shape = mlp.shape();
  return w;
}

Result<NavigatorWeights> LoadNavigatorWeights(const std::string& path) {
  std::error_code ec;
  std::string file;
  if (fs::is_regular_file(path, ec)) {
    file = path;
  } else if (fs::is_directory(path, ec)) {
    if (fs::is_regular_file(path + "/navigator.safetensors", ec)) {
      file = path + "/navigator.safetensors";
    } else if (fs::is_directory(path + "/checkpoints", ec)) {
      CheckpointStore store(path + "/checkpoints", 0);
      auto latest = store.LoadLatest();
      if (!latest.ok()) return latest.status().Annotate(path + ": no usable checkpoint");
      file = latest->path + "/navigator.safetensors";
    } else {
      return NotFound(path + ": neither navigator.safetensors nor checkpoints/ found");
    }
  } else {
    return NotFound(path + ": no such file or directory");
  }
  std::string bytes;
  ALLOT_RETURN_IF_ERROR(ReadFile(file, &bytes));
  return ParseNavigatorWeights(bytes, file);
}

std::vector<std::string> NavigatorActionNames(int num_actions) {
  return envs::rlot::ActionNames(num_actions);
}

}  // namespace allot::trainer
