#include "models/kv_cache.h"

#include <torch/torch.h>

#include <algorithm>

namespace allot::models {

// ---------------------------------------------------------------------------------------------
// KVCache

KVCache::KVCache(int64_t num_layers) : k_(num_layers), v_(num_layers), length_(num_layers, 0) {}

int64_t KVCache::batch_size() const { return k_.empty() || !k_[0].defined() ? 0 : k_[0].size(0); }

std::pair<at::Tensor, at::Tensor> KVCache::Append(int64_t layer, const at::Tensor& k,
                                                  const at::Tensor& v) {
  at::Tensor& kb = k_[layer];
  at::Tensor& vb = v_[layer];
  int64_t& len = length_[layer];
  const int64_t t = k.size(2);
  const int64_t capacity = kb.defined() ? kb.size(2) : 0;
  if (len + t > capacity) {
    const int64_t grown = std::max({len + t, 2 * capacity, int64_t{16}});
    std::vector<int64_t> shape = k.sizes().vec();
    shape[2] = grown;
    at::Tensor nk = torch::empty(shape, k.options());
    at::Tensor nv = torch::empty(shape, v.options());
    if (len > 0) {
      nk.narrow(2, 0, len).copy_(kb.narrow(2, 0, len));
      nv.narrow(2, 0, len).copy_(vb.narrow(2, 0, len));
    }
    kb = nk;
    vb = nv;
  }
  kb.narrow(2, len, t).copy_(k);
  vb.narrow(2, len, t).copy_(v);
  len += t;
  return {kb.narrow(2, 0, len), vb.narrow(2, 0, len)};
}

std::pair<at::Tensor, at::Tensor> KVCache::Stored(int64_t layer) const {
  const auto l = static_cast<size_t>(layer);
  if (!k_[l].defined()) return {};
  return {k_[l].narrow(2, 0, length_[l]), v_[l].narrow(2, 0, length_[l])};
}

void KVCache::Select(const at::Tensor& batch_indices) {
  for (size_t l = 0; l < k_.size(); ++l) {
    if (!k_[l].defined()) continue;
    at::Tensor idx = batch_indices.to(k_[l].device());
    k_[l] = k_[l].index_select(0, idx);
    v_[l] = v_[l].index_select(0, idx);
  }
}

// ---------------------------------------------------------------------------------------------
// StaticKVCache

StaticKVCache::StaticKVCache(int64_t num_layers, int64_t batch, int64_t kv_heads, int64_t capacity,
                             int64_t head_dim, const at::TensorOptions& options)
    : capacity_(capacity) {
  for (int64_t l = 0; l < num_layers; ++l) {
    // Zeros, not empty: masked columns still enter the attention's products (times zero
    // weight), and uninitialised memory may hold NaN or Inf, which zero does not cancel.
    k_.push_back(torch::zeros({batch, kv_heads, capacity, head_dim}, options));
    v_.push_back(torch::zeros({batch, kv_heads, capacity, head_dim}, options));
  }
  position_ = torch::zeros({1}, options.dtype(torch::kLong));
}

void StaticKVCache::Load(const KVCache& source) {
  const int64_t length = source.length();
  TORCH_CHECK(length <= capacity_, "StaticKVCache: ", length, " tokens exceed the capacity ",
              capacity_);
  for (size_t l = 0; l < k_.size(); ++l) {
    auto [k, v] = source.Stored(static_cast<int64_t>(l));
    if (!k.defined()) continue;
    TORCH_CHECK(k.size(0) == k_[l].size(0), "StaticKVCache: ", k.size(0), " rows, expected ",
                k_[l].size(0));
    k_[l].narrow(2, 0, length).copy_(k);
    v_[l].narrow(2, 0, length).copy_(v);
  }
  position_.fill_(length);
}

std::pair<at::Tensor, at::Tensor> StaticKVCache::Append(int64_t layer, const at::Tensor& k,
                                                        const at::Tensor& v) {
  const auto l = static_cast<size_t>(layer);
  TORCH_CHECK(k.size(2) == 1, "StaticKVCache: one column per step, got ", k.size(2));
  k_[l].index_copy_(2, position_, k);
  v_[l].index_copy_(2, position_, v);
  return {k_[l], v_[l]};
}

void StaticKVCache::Advance() { position_.add_(1); }

void StaticKVCache::Select(const at::Tensor& batch_indices) {
  for (size_t l = 0; l < k_.size(); ++l) {
    at::Tensor idx = batch_indices.to(k_[l].device());
    k_[l] = k_[l].index_select(0, idx);
    v_[l] = v_[l].index_select(0, idx);
  }
}

void StaticKVCache::SelectInPlace(const at::Tensor& batch_indices) {
  for (size_t l = 0; l < k_.size(); ++l) {
    const at::Tensor idx = batch_indices.to(k_[l].device());
    const int64_t n = idx.size(0);
    k_[l].narrow(0, 0, n).copy_(k_[l].index_select(0, idx));
    v_[l].narrow(0, 0, n).copy_(v_[l].index_select(0, idx));
  }
}

}  // namespace allot::models
