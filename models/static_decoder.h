// StaticDecoder: the decode loop's state in buffers of fixed shape - a StaticKVCache, the
// attention mask [B, capacity] and the next position id of every row - so that one decode step
// (Step) is a fixed sequence of kernels with no host synchronisation: the unit a CUDA graph
// captures and replays. Built from a prefilled (growing) cache and its left-padded mask.
//
// With `cuda_graph` (CUDA builds and devices only), steps after the first of each batch shape
// replay a CUDA graph of Run (decode_graph.h): the second step is captured, the first warms
// up. A capture that fails logs a warning and leaves the decoder eager. The graph is dropped,
// and captured again, when the model's weights_version() changes (a LoRA adapter swapped in or
// out: the graph would read the old adapter's memory). Rows that leave are compacted in place
// (fixed_rows), so the buffers - and the graph - keep their addresses.
//
// Step gives the same logits as CausalLM::Hidden with the growing cache and the mask extended
// by a column of ones (up to float rounding: the masked columns add exact zeros to the
// softmax's sums). Not thread-safe; the model must outlive it.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "models/kv_cache.h"

namespace allot::models {

class CausalLMImpl;
class DecodeGraph;

class StaticDecoder {
 public:
  // `prefilled` holds the keys/values of the left-padded prompts whose mask is `mask` [B, len]
  // (1 = real token, any integer or bool dtype); the next step writes column len. `capacity`
  // (>= len + 1) bounds the columns ever written.
  // `fixed_rows`: Select() compacts rows in place and the buffers keep their shape; the rows
  // past batch_size() keep running on stale data, unread. Implied by `cuda_graph`.
  StaticDecoder(CausalLMImpl* model, const KVCache& prefilled, const at::Tensor& mask,
                int64_t capacity, bool cuda_graph = false, bool fixed_rows = false);
  ~StaticDecoder();
  StaticDecoder(const StaticDecoder&) = delete;
  StaticDecoder& operator=(const StaticDecoder&) = delete;

  // Feeds `tokens` (int64 [B], any device), one per row, and returns the float32 logits
  // [B, vocab] of the next token (a view of the logits buffer, valid until the next call).
  // Copies the tokens into the input buffer, then runs Run() or replays its graph.
  at::Tensor Step(const at::Tensor& tokens);

  // The step on the fixed buffers: marks the write column as real, runs the decoder on
  // input_ids(), writes the logits into logits() and moves the write column and positions on.
  // Only device work, no host synchronisation (CUDA graph capture replays exactly this).
  void Run();

  // Keeps the rows `batch_indices` (int64 [B'], in that order).
  void Select(const at::Tensor& batch_indices);

  // What has been written so far: every layer's keys and values [B, kv_heads, length, D] and
  // the mask [B, length] (bool), e.g. to merge another prefilled batch in.
  std::vector<std::pair<at::Tensor, at::Tensor>> Contents() const;
  at::Tensor Mask() const;

  int64_t batch_size() const { return rows_; }  // live rows
  bool graph_captured() const { return graph_captured_; }
  int64_t length() const { return length_; }  // columns written
  int64_t capacity() const { return cache_.capacity(); }
  at::Tensor& input_ids() { return input_ids_; }  // int64 [B, 1]
  at::Tensor& logits() { return logits_; }        // float32 [B, vocab]

 private:
  void StepWithGraph();

  CausalLMImpl* model_;
  StaticKVCache cache_;
  at::Tensor allowed_;    // bool [B, capacity]
  at::Tensor positions_;  // int64 [B, 1]: the position id of the token fed next
  at::Tensor input_ids_;  // int64 [B, 1]
  at::Tensor logits_;     // float32 [B, vocab]
  int64_t length_;        // host mirror of cache_.position()
  int64_t rows_;          // live rows: the first rows_ of the buffers
  bool fixed_rows_;
  bool use_graph_;
  std::unique_ptr<DecodeGraph> graph_;
  bool warmed_up_ = false;
  bool graph_captured_ = false;
  uint64_t graph_weights_version_ = 0;
};

}  // namespace allot::models
