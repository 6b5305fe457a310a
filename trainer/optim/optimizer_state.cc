#include "trainer/optim/optimizer_state.h"

#include <torch/torch.h>

#include <cstring>
#include <map>
#include <span>
#include <vector>

#include "core/safetensors.h"
#include "models/weights_io.h"
#include "trainer/optim/adamw.h"
#include "trainer/optim/optimizer_state_key.h"

namespace allot::trainer {
namespace {

Result<safetensors::TensorRef> Ref(const std::string& name, const at::Tensor& t) {
  ALLOT_ASSIGN_OR_RETURN(safetensors::Dtype dtype, models::ToSafetensorsDtype(t.scalar_type()));
  safetensors::TensorRef ref;
  ref.name = name;
  ref.dtype = dtype;
  ref.shape.assign(t.sizes().begin(), t.sizes().end());
  ref.data = std::span<const std::byte>(static_cast<const std::byte*>(t.data_ptr()), t.nbytes());
  return ref;
}

Result<at::Tensor> Read(const safetensors::View& view, const std::string& name,
                        const at::Tensor& like, const std::string& source) {
  const safetensors::TensorInfo* info = view.Find(name);
  if (info == nullptr) return DataLoss(source + ": optimizer state has no tensor " + name);
  if (info->shape != std::vector<int64_t>(like.sizes().begin(), like.sizes().end())) {
    return DataLoss(source + ": optimizer state " + name +
                    " has the wrong shape for its parameter");
  }
  ALLOT_ASSIGN_OR_RETURN(at::ScalarType type,
                         models::ToScalarType(info->dtype, source + ": " + name));
  auto data = view.Data(*info);
  at::Tensor cpu = torch::empty(like.sizes(), torch::TensorOptions().dtype(type));
  std::memcpy(cpu.data_ptr(), data.data(), data.size());
  return cpu.to(like.options());
}

}  // namespace

Result<std::string> SerializeAdamWState(const torch::optim::AdamW& optimizer,
                                        int64_t schedule_step) {
  const std::vector<at::Tensor> params = OptimizerParameters(optimizer);
  std::vector<at::Tensor> keep;  // contiguous CPU copies alive until Serialize returns
  std::vector<safetensors::TensorRef> refs;
  std::map<std::string, std::string> meta;
  meta["params"] = std::to_string(params.size());
  meta["schedule_step"] = std::to_string(schedule_step);
  const auto& state = optimizer.state();
  for (size_t i = 0; i < params.size(); ++i) {
    auto it = state.find(StateKey(params[i]));
    if (it == state.end()) continue;  // no update has touched this parameter yet
    const auto& s = static_cast<const torch::optim::AdamWParamState&>(*it->second);
    const std::string prefix = "param." + std::to_string(i) + ".";
    meta[prefix + "step"] = std::to_string(s.step());
    std::vector<std::pair<std::string, at::Tensor>> tensors = {{"exp_avg", s.exp_avg()},
                                                               {"exp_avg_sq", s.exp_avg_sq()}};
    if (s.max_exp_avg_sq().defined()) tensors.emplace_back("max_exp_avg_sq", s.max_exp_avg_sq());
    for (auto& [suffix, t] : tensors) {
      keep.push_back(t.detach().to(torch::kCPU).contiguous());
      ALLOT_ASSIGN_OR_RETURN(auto ref, Ref(prefix + suffix, keep.back()));
      refs.push_back(std::move(ref));
    }
  }
  return safetensors::Serialize(refs, meta);
}

Result<int64_t> RestoreAdamWState(torch::optim::AdamW& optimizer, std::string_view bytes,
                                  const std::string& source) {
  ALLOT_ASSIGN_OR_RETURN(
      safetensors::View view,
      safetensors::View::Parse(std::span<const std::byte>(
                                   reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()),
                               source));
  const auto& meta = view.metadata();
  auto get = [&](const std::string& key) -> Result<int64_t> {
    auto it = meta.find(key);
    if (it == meta.end())
      return DataLoss(source + ": optimizer state lacks metadata '" + key + "'");
    try {
      size_t used = 0;
      const int64_t v = std::stoll(it->second, &used);
      if (used != it->second.size()) throw std::invalid_argument(key);
      return v;
    } catch (const std::exception&) {
      return DataLoss(source + ": optimizer state metadata '" + key + "' is not an integer");
    }
  };
  const std::vector<at::Tensor> params = OptimizerParameters(optimizer);
  ALLOT_ASSIGN_OR_RETURN(int64_t count, get("params"));
  if (count != static_cast<int64_t>(params.size())) {
    return InvalidArgument(source + ": optimizer state is for " + std::to_string(count) +
                           " parameters, the model trains " + std::to_string(params.size()));
  }
  ALLOT_ASSIGN_OR_RETURN(int64_t schedule_step, get("schedule_step"));
  // Build the whole new state before touching the optimizer, so a bad file changes nothing.
  std::vector<std::pair<OptimizerStateKey, std::unique_ptr<torch::optim::AdamWParamState>>> fresh;
  for (size_t i = 0; i < params.size(); ++i) {
    const std::string prefix = "param." + std::to_string(i) + ".";
    if (meta.find(prefix + "step") == meta.end()) continue;
    ALLOT_ASSIGN_OR_RETURN(int64_t step, get(prefix + "step"));
    auto s = std::make_unique<torch::optim::AdamWParamState>();
    s->step(step);
    const at::Tensor p = params[i].detach();
    ALLOT_ASSIGN_OR_RETURN(at::Tensor m, Read(view, prefix + "exp_avg", p, source));
    ALLOT_ASSIGN_OR_RETURN(at::Tensor v, Read(view, prefix + "exp_avg_sq", p, source));
    s->exp_avg(m);
    s->exp_avg_sq(v);
    if (view.Find(prefix + "max_exp_avg_sq") != nullptr) {
      ALLOT_ASSIGN_OR_RETURN(at::Tensor mx, Read(view, prefix + "max_exp_avg_sq", p, source));
      s->max_exp_avg_sq(mx);
    }
    fresh.emplace_back(StateKey(params[i]), std::move(s));
  }
  auto& state = optimizer.state();
  state.clear();
  for (auto& [key, s] : fresh) state[key] = std::move(s);
  return schedule_step;
}

}  // namespace allot::trainer
