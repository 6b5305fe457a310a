#include "models/navigator_mlp.h"

#include <algorithm>
#include <charconv>
#include <cstring>

#include "core/safetensors.h"

namespace allot::models {
namespace {

// y[o] = b[o] + sum_i W[o, i] x[i]; optionally ReLU.
void Dense(const std::vector<float>& w, const std::vector<float>& b, const float* x, int in,
           float* y, int out, bool relu) {
  for (int o = 0; o < out; ++o) {
    const float* row = w.data() + static_cast<size_t>(o) * in;
    float acc = b[o];
    for (int i = 0; i < in; ++i) acc += row[i] * x[i];
    y[o] = relu ? std::max(acc, 0.0f) : acc;
  }
}

Status Take(const safetensors::View& view, const std::string& source, const std::string& name,
            std::vector<int64_t> shape, std::vector<float>* out) {
  const safetensors::TensorInfo* t = view.Find(name);
  if (t == nullptr) return InvalidArgument(source + ": missing tensor '" + name + "'");
  if (t->dtype != safetensors::Dtype::kF32) {
    return InvalidArgument(source + ": tensor '" + name + "' must be F32");
  }
  if (t->shape != shape) {
    return InvalidArgument(source + ": tensor '" + name + "' has the wrong shape");
  }
  auto data = view.Data(*t);
  out->resize(data.size() / sizeof(float));
  std::memcpy(out->data(), data.data(), data.size());
  return Status::Ok();
}

float MetaFloat(const safetensors::View& view, const std::string& key, float fallback) {
  auto it = view.metadata().find(key);
  if (it == view.metadata().end()) return fallback;
  float v = fallback;
  std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  return v;
}

}  // namespace

Result<NavigatorMlp> NavigatorMlp::FromSafetensors(std::span<const std::byte> bytes,
                                                   const std::string& source) {
  ALLOT_ASSIGN_OR_RETURN(safetensors::View view, safetensors::View::Parse(bytes, source));
  const safetensors::TensorInfo* trunk = view.Find("trunk.weight");
  const safetensors::TensorInfo* adv = view.Find("adv_out.weight");
  if (trunk == nullptr || adv == nullptr || trunk->shape.size() != 2 || adv->shape.size() != 2) {
    return InvalidArgument(source + ": not a DuelingQNet (trunk.weight / adv_out.weight)");
  }
  NavigatorMlp m;
  m.shape_.hidden = static_cast<int>(trunk->shape[0]);
  m.shape_.state_dim = static_cast<int>(trunk->shape[1]);
  m.shape_.num_actions = static_cast<int>(adv->shape[0]);
  m.shape_.input_offset = MetaFloat(view, "input_offset", 1.5f);
  m.shape_.input_scale = MetaFloat(view, "input_scale", 1.5f);
  if (m.shape_.input_scale == 0.0f) return InvalidArgument(source + ": input_scale is 0");
  const int64_t h = m.shape_.hidden, s = m.shape_.state_dim, a = m.shape_.num_actions;
  if (h <= 0 || s <= 0 || a <= 0 || h > 4096 || s > 4096 || a > 4096) {
    return InvalidArgument(source + ": implausible navigator sizes");
  }
  ALLOT_RETURN_IF_ERROR(Take(view, source, "trunk.weight", {h, s}, &m.trunk_w_));
  ALLOT_RETURN_IF_ERROR(Take(view, source, "trunk.bias", {h}, &m.trunk_b_));
  ALLOT_RETURN_IF_ERROR(Take(view, source, "adv_hidden.weight", {h, h}, &m.adv_h_w_));
  ALLOT_RETURN_IF_ERROR(Take(view, source, "adv_hidden.bias", {h}, &m.adv_h_b_));
  ALLOT_RETURN_IF_ERROR(Take(view, source, "adv_out.weight", {a, h}, &m.adv_o_w_));
  ALLOT_RETURN_IF_ERROR(Take(view, source, "adv_out.bias", {a}, &m.adv_o_b_));
  ALLOT_RETURN_IF_ERROR(Take(view, source, "value_hidden.weight", {h, h}, &m.val_h_w_));
  ALLOT_RETURN_IF_ERROR(Take(view, source, "value_hidden.bias", {h}, &m.val_h_b_));
  ALLOT_RETURN_IF_ERROR(Take(view, source, "value_out.weight", {1, h}, &m.val_o_w_));
  ALLOT_RETURN_IF_ERROR(Take(view, source, "value_out.bias", {1}, &m.val_o_b_));
  return m;
}

NavigatorMlp NavigatorMlp::FromArrays(const Shape& shape, const std::array<const float*, 10>& p) {
  NavigatorMlp m;
  m.shape_ = shape;
  const size_t s = static_cast<size_t>(shape.state_dim), h = static_cast<size_t>(shape.hidden),
               a = static_cast<size_t>(shape.num_actions);
  std::vector<float>* dst[10] = {&m.trunk_w_, &m.trunk_b_, &m.adv_h_w_, &m.adv_h_b_, &m.adv_o_w_,
                                 &m.adv_o_b_, &m.val_h_w_, &m.val_h_b_, &m.val_o_w_, &m.val_o_b_};
  const size_t sizes[10] = {h * s, h, h * h, h, a * h, a, h * h, h, h, 1};
  for (size_t k = 0; k < 10; ++k) dst[k]->assign(p[k], p[k] + sizes[k]);
  return m;
}

void NavigatorMlp::Forward(std::span<const float> state, std::span<float> q) const {
  const int s = shape_.state_dim, h = shape_.hidden, a = shape_.num_actions;
  float x[4096], t[4096], u[4096], adv[4096], v = 0;
  for (int i = 0; i < s; ++i) x[i] = (state[i] - shape_.input_offset) / shape_.input_scale;
  Dense(trunk_w_, trunk_b_, x, s, t, h, true);
  Dense(adv_h_w_, adv_h_b_, t, h, u, h, true);
  Dense(adv_o_w_, adv_o_b_, u, h, adv, a, false);
  Dense(val_h_w_, val_h_b_, t, h, u, h, true);
  Dense(val_o_w_, val_o_b_, u, h, &v, 1, false);
  float mean = 0;
  for (int i = 0; i < a; ++i) mean += adv[i];
  mean /= static_cast<float>(a);
  for (int i = 0; i < a; ++i) q[i] = v + adv[i] - mean;
}

int NavigatorMlp::Greedy(std::span<const float> state) const {
  float q[4096];
  Forward(state, std::span<float>(q, shape_.num_actions));
  return static_cast<int>(std::max_element(q, q + shape_.num_actions) - q);
}

}  // namespace allot::models
