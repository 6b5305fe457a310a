// Key/value caches for decoding: what attention appends each step's keys and values to and reads
// back. Two of them:
//  * KVCache grows with the sequence (buffers doubling), so a prompt and its decode need no
//    capacity up front; its length is a host-side count.
//  * StaticKVCache is preallocated to a capacity and the column the next step writes is data on
//    the device, so a decode step has fixed shapes and no host synchronisation: what a CUDA
//    graph can capture and replay. Attention reads the whole buffer; the caller's mask hides the
//    columns not written yet.
// Both hold [B, kv_heads, length, head_dim] per layer. Not thread-safe.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/TensorOptions.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace allot::models {

// What a decoder layer's attention needs of a cache.
class AttentionCache {
 public:
  virtual ~AttentionCache() = default;
  // Stores `layer`'s keys/values of this step ([B, kv_heads, T, head_dim]) and returns the keys
  // and values attention reads ([B, kv_heads, S, head_dim]).
  virtual std::pair<at::Tensor, at::Tensor> Append(int64_t layer, const at::Tensor& k,
                                                   const at::Tensor& v) = 0;
};

// Keys and values of every layer for a batch, in buffers that grow by doubling so that decoding
// one token does not copy the whole cache.
class KVCache : public AttentionCache {
 public:
  explicit KVCache(int64_t num_layers);

  // Tokens stored so far (the same for every layer between forward calls).
  int64_t length() const { return length_.empty() ? 0 : length_[0]; }
  int64_t batch_size() const;

  // Appends this step's keys/values of `layer` and returns views of everything stored.
  std::pair<at::Tensor, at::Tensor> Append(int64_t layer, const at::Tensor& k,
                                           const at::Tensor& v) override;

  // Views of `layer`'s stored keys and values ([B, kv_heads, length, head_dim]); undefined
  // before the first Append.
  std::pair<at::Tensor, at::Tensor> Stored(int64_t layer) const;

  // Keeps only the rows `batch_indices` (int64 [B']) of the batch, e.g. unfinished sequences.
  void Select(const at::Tensor& batch_indices);

 private:
  std::vector<at::Tensor> k_;
  std::vector<at::Tensor> v_;
  std::vector<int64_t> length_;
};

// Keys and values of every layer in buffers of `capacity` columns allocated once. Append writes
// T = 1 column at position() (an int64 [1] tensor on the cache's device) with index_copy_, and
// returns the whole buffers: attention must mask the columns that hold no token yet (and the
// left padding). Advance() moves the write column on, on the device.
class StaticKVCache : public AttentionCache {
 public:
  StaticKVCache(int64_t num_layers, int64_t batch, int64_t kv_heads, int64_t capacity,
                int64_t head_dim, const at::TensorOptions& options);

  // Copies everything `source` stores (same batch size, length <= capacity) into columns
  // [0, length); the write column becomes `length`.
  void Load(const KVCache& source);

  std::pair<at::Tensor, at::Tensor> Append(int64_t layer, const at::Tensor& k,
                                           const at::Tensor& v) override;

  // The column the next Append writes: int64 [1] on the device; Advance() adds one to it.
  const at::Tensor& position() const { return position_; }
  void Advance();

  // Keeps only the rows `batch_indices` (int64 [B']), in that order.
  void Select(const at::Tensor& batch_indices);
  // The same rows moved to the front of the buffers, which keep their shape and addresses (a
  // captured CUDA graph still reads them); the rows after B' hold stale data.
  void SelectInPlace(const at::Tensor& batch_indices);

  int64_t batch_size() const { return k_.empty() ? 0 : k_[0].size(0); }
  int64_t capacity() const { return capacity_; }
  // Layer `layer`'s key and value buffers [B, kv_heads, capacity, head_dim].
  const at::Tensor& keys(int64_t layer) const { return k_[static_cast<size_t>(layer)]; }
  const at::Tensor& values(int64_t layer) const { return v_[static_cast<size_t>(layer)]; }

 private:
  std::vector<at::Tensor> k_;
  std::vector<at::Tensor> v_;
  at::Tensor position_;
  int64_t capacity_;
};

}  // namespace allot::models
