// CausalLM: the Qwen2 / Llama decoder in LibTorch, loaded from a Hugging Face directory.
//
//   h = embed_tokens(ids)
//   per layer:  h += o_proj(Attention(RoPE(q_proj(RMSNorm(h))), RoPE(k_proj(.)), v_proj(.)))
//               h += down_proj(silu(gate_proj(RMSNorm(h))) * up_proj(RMSNorm(h)))
//   logits = lm_head(RMSNorm(h))       (lm_head = embed_tokens when tie_word_embeddings)
//
// The module tree mirrors transformers' Qwen2ForCausalLM, so named_parameters() are the
// checkpoint's tensor names ("model.layers.0.self_attn.q_proj.weight"). RMSNorm and softmax run
// in float32 as in transformers; matmuls run in the weight dtype.
//
// Batches are left-padded: `attention_mask` [B, past + T] has 1 for real tokens and 0 for pad,
// and position ids count real tokens only. Not thread-safe: one caller at a time.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/pimpl.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "models/hf_config.h"
#include "models/kv_cache.h"
#include "models/lora.h"
#include "models/model_config.h"
#include "models/weights_io.h"

namespace allot::models {

class RMSNormImpl : public torch::nn::Module {
 public:
  RMSNormImpl(int64_t dim, double eps, const at::TensorOptions& options);
  at::Tensor forward(const at::Tensor& x);
  at::Tensor weight;

 private:
  double eps_;
};
TORCH_MODULE(RMSNorm);

class DecoderLayerImpl;

// One projection that LoRA can adapt, named by its module path.
struct LinearSite {
  std::string path;  // "model.layers.3.mlp.down_proj"
  std::string kind;  // "down_proj"
  LoraLinear linear;
};

struct LoadOptions {
  std::string dtype = "auto";  // "auto" (config.json torch_dtype), float32, bfloat16, float16
  std::string device = "cpu";
  bool packing = true;                  // set_packing
  bool gradient_checkpointing = false;  // SetGradientCheckpointing
  int64_t checkpoint_layers = -1;       // with gradient_checkpointing: the first N layers; -1 all
};

class CausalLMImpl : public torch::nn::Module {
 public:
  // Random initialisation (nn.Linear / nn.Embedding defaults, norms at 1).
  CausalLMImpl(const TransformerConfig& config, const at::TensorOptions& options);

  // Reads DIR/config.json and the (possibly sharded) DIR/model.safetensors. Every tensor the
  // model needs must be present with the right shape; errors name the file and the tensor.
  static Result<std::shared_ptr<CausalLMImpl>> Load(const std::string& dir,
                                                    const LoadOptions& options = {});
  static Result<std::shared_ptr<CausalLMImpl>> Load(const ModelConfig& config);

  // Final hidden states [B, T, hidden] (after the last RMSNorm) for `input_ids` [B, T] int64.
  // `attention_mask` [B, past + T] (undefined = no padding); `position_ids` [B, T] (undefined =
  // counted from the mask); `cache` (nullable) is read and extended by T tokens.
  at::Tensor Hidden(const at::Tensor& input_ids, const at::Tensor& attention_mask = {},
                    const at::Tensor& position_ids = {}, KVCache* cache = nullptr);

  // Final hidden states [B, 1, hidden] of one decode step through a static cache: `input_ids`
  // and `position_ids` [B, 1] int64, `allowed` bool [B, capacity] (true: a real token, this
  // step's column included). Shapes are fixed and nothing is read back to the host, so a CUDA
  // graph can capture it; the write column is cache->position(), which the caller advances.
  at::Tensor DecodeHidden(const at::Tensor& input_ids, const at::Tensor& position_ids,
                          const at::Tensor& allowed, StaticKVCache* cache);

  // Final hidden states [N, hidden] of packed sequences (packed_sequences.h): `input_ids` [N]
  // holds segments of `lengths` one after another; each attends only within itself, with
  // positions restarting at 0, so each gets exactly the hidden states it would get alone.
  at::Tensor HiddenPacked(const at::Tensor& input_ids, const std::vector<int64_t>& lengths);

  // Float32 logits for hidden states [..., hidden].
  at::Tensor Logits(const at::Tensor& hidden);

  // Full float32 logits [B, T, vocab]. For short inputs; training uses TokenLogProbs.
  at::Tensor forward(const at::Tensor& input_ids, const at::Tensor& attention_mask = {});

  // log p(input_ids[:, t+1] | input_ids[:, :t+1]) for t < T-1, float32 [B, T-1], differentiable.
  // Logits are formed `chunk_tokens` rows at a time in forward and again in backward, so the
  // full [B, T, vocab] tensor never exists. `temperature` divides the logits first. With
  // packing on and an attention mask whose real tokens fit in fewer rows, the sequences are
  // packed (packed_sequences.h) and columns that do not score a real token after a real one
  // (padding, a sequence's first token) are 0 instead of a log-prob conditioned on padding.
  // `needed` [B, T-1] (any dtype, non-zero = needed; on any device): only those columns get
  // logits and a log-prob (the others are 0) - a learner scores completions, not prompts.
  at::Tensor TokenLogProbs(const at::Tensor& input_ids, const at::Tensor& attention_mask = {},
                           int64_t chunk_tokens = 512, double temperature = 1.0,
                           const at::Tensor& needed = {});

  // Chunked log-probs of `targets` [N] under hidden states [N, hidden].
  at::Tensor SelectedLogProbs(const at::Tensor& hidden, const at::Tensor& targets,
                              int64_t chunk_tokens = 512, double temperature = 1.0);

  // The logits matrix [vocab, hidden]: lm_head.weight, or embed_tokens.weight when tied.
  at::Tensor output_weight() const;

  // model.packing: TokenLogProbs packs variable-length batches (default on).
  void set_packing(bool on) { packing_ = on; }
  bool packing() const { return packing_; }
  // model.gradient_checkpointing: in training mode with grad enabled, each decoder layer keeps
  // only its input and is recomputed in backward (layer_checkpoint.h). Default off.
  void set_gradient_checkpointing(bool on) {
    checkpoint_layers_ = on ? static_cast<int64_t>(layers_.size()) : 0;
  }
  // model.checkpoint_layers: only the first `layers` decoder layers are recomputed (-1: all), the
  // others keep their activations, as Megatron's recompute_num_layers with the block method: a
  // long batch that does not fit without checkpointing skips part of the extra forward. `layers`
  // without `on` is an error, as is more layers than the model has (both name the field).
  Status SetGradientCheckpointing(bool on, int64_t layers = -1);
  bool gradient_checkpointing() const { return checkpoint_layers_ > 0; }
  int64_t checkpoint_layers() const { return checkpoint_layers_; }

  const TransformerConfig& config() const { return config_; }
  at::ScalarType dtype() const { return dtype_; }
  at::Device device() const;

  // The q/k/v/o/gate/up/down projections of every layer, in layer order.
  const std::vector<LinearSite>& linear_sites() const { return sites_; }

  // Adds a LoRA adapter to the projections whose kind is in `target_kinds` ("q_proj", ...);
  // every base parameter is frozen. lora_A is drawn from a generator seeded with `seed`.
  Status AttachLora(const LoraSpec& spec, const std::vector<std::string>& target_kinds,
                    uint64_t seed = 0);
  // Attaches an adapter made of `tensors` (LoraParameters() order: A then B of each projection
  // whose kind is in `target_kinds`), sharing their storage: a learner that trains one adapter
  // per role swaps them in and out (LoraLinearImpl::SetLora). Base parameters are frozen.
  Status SetLora(const LoraSpec& spec, const std::vector<std::string>& target_kinds,
                 const std::vector<at::Tensor>& tensors);
  void DetachLora();
  // Folds the adapter into the base weights (W += s B A) and removes it, e.g. before serving.
  void MergeLora();
  bool has_lora() const;
  void SetLoraEnabled(bool enabled);
  // Every projection's LoRA dropout draws its CPU masks from `generator` (shared, one stream;
  // LoraLinearImpl::set_dropout_generator), adapters attached later included.
  void SetLoraDropoutGenerator(const at::Generator& generator);
  std::vector<at::Tensor> LoraParameters() const;
  // Changes whenever the tensors a forward pass reads change (an adapter attached, set,
  // detached, merged, switched on or off): a captured CUDA graph of a decode step
  // (StaticDecoder) is stale once it moves. In-place updates of the same tensors keep it.
  uint64_t weights_version() const { return weights_version_; }

  // Writes DIR/config.json and DIR/model.safetensors with the adapter (if any) merged into the
  // weights, in `dtype` ("auto" = the model's dtype; "float16" works on CPU too).
  Status SaveMerged(const std::string& dir, const std::string& dtype = "auto") const;

  // Base weights by checkpoint name (merged with the adapter when `merged`).
  NamedTensors StateTensors(bool merged) const;

 private:
  TransformerConfig config_;
  at::ScalarType dtype_;
  std::shared_ptr<torch::nn::Module> model_;  // "model": embed_tokens, layers, norm
  torch::nn::Embedding embed_tokens_{nullptr};
  std::vector<std::shared_ptr<DecoderLayerImpl>> layers_;
  RMSNorm norm_{nullptr};
  at::Tensor lm_head_weight_;  // undefined when tied
  std::vector<LinearSite> sites_;
  at::Tensor inv_freq_;  // float32 [head_dim / 2]
  bool packing_ = true;
  int64_t checkpoint_layers_ = 0;  // decoder layers recomputed in backward, from the first
  uint64_t weights_version_ = 0;

  // Embedding, the decoder layers (checkpointed when asked) and the final norm, for a mask
  // `allowed` [B or 1, 1, T, S] (undefined = everything) and positions [B, T]; with `segments`,
  // one packed row and the causal mask [L, L] of its longest segment.
  at::Tensor RunDecoder(const at::Tensor& input_ids, const at::Tensor& position_ids,
                        const at::Tensor& allowed, AttentionCache* cache,
                        const std::vector<int64_t>* segments = nullptr);
};
TORCH_MODULE(CausalLM);

// Position ids for a left-padded batch: the count of real tokens before each position, for
// the last `t` columns of `attention_mask` [B, S].
at::Tensor PositionIdsFromMask(const at::Tensor& attention_mask, int64_t t);

// Parses "q", "q_proj", ..., "all-linear" into projection kinds; unknown names are errors.
Result<std::vector<std::string>> ResolveTargetModules(const std::vector<std::string>& names);

}  // namespace allot::models
