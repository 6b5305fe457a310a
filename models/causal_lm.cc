#include "models/causal_lm.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <set>

#include "core/atomic_file.h"
#include "core/safetensors.h"
#include "models/chunked_logprob.h"
#include "models/layer_checkpoint.h"
#include "models/packed_sequences.h"

namespace allot::models {
namespace {

using torch::indexing::Slice;

at::Tensor RotateHalf(const at::Tensor& x) {
  const int64_t half = x.size(-1) / 2;
  return torch::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Layers

RMSNormImpl::RMSNormImpl(int64_t dim, double eps, const at::TensorOptions& options) : eps_(eps) {
  weight = register_parameter("weight", torch::ones({dim}, options));
}

at::Tensor RMSNormImpl::forward(const at::Tensor& x) {
  // transformers' Qwen2RMSNorm: normalise in float32, cast back, then scale.
  at::Tensor h = x.to(torch::kFloat);
  h = h * torch::rsqrt(h.pow(2).mean(-1, /*keepdim=*/true) + eps_);
  return weight * h.to(x.scalar_type());
}

class AttentionImpl : public torch::nn::Module {
 public:
  AttentionImpl(const TransformerConfig& c, const at::TensorOptions& o)
      : heads_(c.num_attention_heads), kv_heads_(c.num_key_value_heads), head_dim_(c.head_dim) {
    const bool bias = c.attention_bias;
    q_proj = register_module("q_proj", LoraLinear(c.hidden_size, heads_ * head_dim_, bias, o));
    k_proj = register_module("k_proj", LoraLinear(c.hidden_size, kv_heads_ * head_dim_, bias, o));
    v_proj = register_module("v_proj", LoraLinear(c.hidden_size, kv_heads_ * head_dim_, bias, o));
    // Llama's and Qwen3's o_proj follow attention_bias; Qwen2's never has a bias.
    const bool o_bias = c.family != ModelFamily::kQwen2 && c.attention_bias;
    o_proj = register_module("o_proj", LoraLinear(heads_ * head_dim_, c.hidden_size, o_bias, o));
    if (c.qk_norm()) {  // Qwen3: RMSNorm over each head's query and key, before RoPE
      q_norm = register_module("q_norm", RMSNorm(head_dim_, c.rms_norm_eps, o));
      k_norm = register_module("k_norm", RMSNorm(head_dim_, c.rms_norm_eps, o));
    }
  }

  // `segments` (packed_sequences.h): x is one packed row [1, N, hidden] whose segments attend
  // only within themselves, and `allowed` is then the causal mask [L, L] of the longest one.
  at::Tensor forward(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                     const at::Tensor& allowed, AttentionCache* cache, int64_t layer,
                     const std::vector<int64_t>* segments = nullptr) {
    const int64_t b = x.size(0);
    const int64_t t = x.size(1);
    at::Tensor q = q_proj(x).view({b, t, heads_, head_dim_});
    at::Tensor k = k_proj(x).view({b, t, kv_heads_, head_dim_});
    if (q_norm) {
      q = q_norm(q);
      k = k_norm(k);
    }
    q = q.transpose(1, 2);
    k = k.transpose(1, 2);
    at::Tensor v = v_proj(x).view({b, t, kv_heads_, head_dim_}).transpose(1, 2);
    q = q * cos + RotateHalf(q) * sin;
    k = k * cos + RotateHalf(k) * sin;
    if (cache != nullptr) std::tie(k, v) = cache->Append(layer, k, v);
    if (t == 1 && segments == nullptr && heads_ != kv_heads_) {
      return o_proj(DecodeGrouped(q, k, v, allowed).reshape({b, 1, heads_ * head_dim_}));
    }
    if (heads_ != kv_heads_) {  // grouped-query attention: each kv head serves heads/kv queries
      k = k.repeat_interleave(heads_ / kv_heads_, 1);
      v = v.repeat_interleave(heads_ / kv_heads_, 1);
    }
#if TORCH_VERSION_MAJOR >= 2
    // LibTorch 2's fused attention (FlashAttention or the memory-efficient kernel on CUDA) never
    // holds the [T, T] scores. It serves every mask that is plain causal - each packed segment,
    // an unpadded prompt (`allowed` 2-D, see Hidden) - or absent, and every decode step (T = 1:
    // its one query always sees its own key, so no row is fully masked). Padded prompts keep
    // the explicit path below, which leaves the fully masked rows of pad queries finite.
    if (segments != nullptr) {
      // split, not a narrow per segment: a narrow's backward writes its segment's gradient into
      // zeros of the whole stream, and the segments' gradients are then summed (a fill, a copy
      // and an add of the whole of q, k and v per segment and layer). Each output goes back to
      // [1, n, heads, head_dim], so that the concatenation is o_proj's input without a copy.
      const std::vector<at::Tensor> qs = q.split_with_sizes(*segments, 2);
      const std::vector<at::Tensor> ks = k.split_with_sizes(*segments, 2);
      const std::vector<at::Tensor> vs = v.split_with_sizes(*segments, 2);
      std::vector<at::Tensor> outs;
      for (size_t i = 0; i < qs.size(); ++i) {
        outs.push_back(at::scaled_dot_product_attention(qs[i], ks[i], vs[i], {}, 0.0,
                                                        /*is_causal=*/true)
                           .transpose(1, 2));
      }
      return o_proj(torch::cat(outs, 1).reshape({b, t, heads_ * head_dim_}));
    }
    if (!allowed.defined() || allowed.dim() == 2 || t == 1) {
      at::Tensor out =
          allowed.defined() && allowed.dim() == 4
              ? at::scaled_dot_product_attention(q, k, v, allowed)
              : at::scaled_dot_product_attention(q, k, v, {}, 0.0,
                                                 /*is_causal=*/allowed.defined() && t > 1);
      return o_proj(out.transpose(1, 2).reshape({b, t, heads_ * head_dim_}));
    }
#endif
    const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim_));
    if (segments != nullptr) {
      // Block-diagonal causal attention at the cost of the blocks: one product per segment.
      // split (one backward for all segments) rather than a narrow per segment, whose backward
      // would write each segment's gradient into a zero tensor of the whole stream; the mask
      // is an additive bias (0 or the lowest float) that the scores' product adds as it scales,
      // which gives the same floats as scaling and filling and has no backward of its own.
      const at::Tensor bias =
          torch::zeros(allowed.sizes(), allowed.options().dtype(torch::kFloat))
              .masked_fill_(allowed.logical_not(), std::numeric_limits<float>::lowest());
      const std::vector<at::Tensor> qs = q.squeeze(0).split_with_sizes(*segments, 1);
      const std::vector<at::Tensor> ks = k.squeeze(0).split_with_sizes(*segments, 1);
      const std::vector<at::Tensor> vs = v.squeeze(0).split_with_sizes(*segments, 1);
      std::vector<at::Tensor> outs;
      for (size_t i = 0; i < qs.size(); ++i) {
        const int64_t n = (*segments)[i];
        const at::Tensor block_bias = bias.narrow(0, 0, n).narrow(1, 0, n);
        at::Tensor sc =
            q.scalar_type() == torch::kFloat
                ? at::baddbmm(block_bias, qs[i], ks[i].transpose(1, 2), /*beta=*/1, scale)
                : (torch::matmul(qs[i], ks[i].transpose(1, 2)) * scale).to(torch::kFloat) +
                      block_bias;
        at::Tensor p = torch::softmax(sc, -1).to(q.scalar_type());
        outs.push_back(torch::matmul(p, vs[i]));
      }
      return o_proj(torch::cat(outs, 1).transpose(0, 1).reshape({b, t, heads_ * head_dim_}));
    }
    at::Tensor scores = (torch::matmul(q, k.transpose(2, 3)) * scale).to(torch::kFloat);
    if (allowed.defined()) {
      scores = scores.masked_fill(allowed.logical_not(), std::numeric_limits<float>::lowest());
    }
    at::Tensor probs = torch::softmax(scores, -1).to(q.scalar_type());
    at::Tensor out = torch::matmul(probs, v).transpose(1, 2).reshape({b, t, heads_ * head_dim_});
    return o_proj(out);
  }

  LoraLinear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, o_proj{nullptr};
  RMSNorm q_norm{nullptr}, k_norm{nullptr};  // Qwen3 only

 private:
  // One decode step of grouped-query attention without repeating keys and values: the
  // heads / kv_heads query heads that share a kv head (consecutive, as repeat_interleave pairs
  // them) become that many query rows of it, q [B, heads, 1, D] -> [B, kv_heads, groups, D]; a
  // view, where repeat_interleave copied the whole cache twice per layer and step. `allowed`
  // (undefined or [B, 1, 1, S] / [B, S] bool) applies to every row. Returns [B, kv_heads,
  // groups, D] (not necessarily contiguous: CUDA kernels may lay it out otherwise).
  at::Tensor DecodeGrouped(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                           const at::Tensor& allowed) {
    const int64_t b = q.size(0);
    const at::Tensor qg = q.reshape({b, kv_heads_, heads_ / kv_heads_, head_dim_});
    const at::Tensor mask = allowed.defined() ? allowed.view({b, 1, 1, -1}) : at::Tensor();
#if TORCH_VERSION_MAJOR >= 2
    return mask.defined() ? at::scaled_dot_product_attention(qg, k, v, mask)
                          : at::scaled_dot_product_attention(qg, k, v);
#else
    const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim_));
    at::Tensor scores = (torch::matmul(qg, k.transpose(2, 3)) * scale).to(torch::kFloat);
    if (mask.defined()) {
      scores = scores.masked_fill(mask.logical_not(), std::numeric_limits<float>::lowest());
    }
    return torch::matmul(torch::softmax(scores, -1).to(q.scalar_type()), v);
#endif
  }

  int64_t heads_, kv_heads_, head_dim_;
};
TORCH_MODULE(Attention);

class MlpImpl : public torch::nn::Module {
 public:
  MlpImpl(const TransformerConfig& c, const at::TensorOptions& o) {
    gate_proj =
        register_module("gate_proj", LoraLinear(c.hidden_size, c.intermediate_size, false, o));
    up_proj = register_module("up_proj", LoraLinear(c.hidden_size, c.intermediate_size, false, o));
    down_proj =
        register_module("down_proj", LoraLinear(c.intermediate_size, c.hidden_size, false, o));
  }
  at::Tensor forward(const at::Tensor& x) {
    return down_proj(torch::silu(gate_proj(x)) * up_proj(x));  // SwiGLU
  }
  LoraLinear gate_proj{nullptr}, up_proj{nullptr}, down_proj{nullptr};
};
TORCH_MODULE(Mlp);

class DecoderLayerImpl : public torch::nn::Module {
 public:
  DecoderLayerImpl(const TransformerConfig& c, const at::TensorOptions& o) {
    input_layernorm = register_module("input_layernorm", RMSNorm(c.hidden_size, c.rms_norm_eps, o));
    self_attn = register_module("self_attn", Attention(c, o));
    post_attention_layernorm =
        register_module("post_attention_layernorm", RMSNorm(c.hidden_size, c.rms_norm_eps, o));
    mlp = register_module("mlp", Mlp(c, o));
  }
  at::Tensor forward(at::Tensor h, const at::Tensor& cos, const at::Tensor& sin,
                     const at::Tensor& allowed, AttentionCache* cache, int64_t layer,
                     const std::vector<int64_t>* segments = nullptr) {
    h = h + self_attn->forward(input_layernorm(h), cos, sin, allowed, cache, layer, segments);
    return h + mlp(post_attention_layernorm(h));
  }
  RMSNorm input_layernorm{nullptr}, post_attention_layernorm{nullptr};
  Attention self_attn{nullptr};
  Mlp mlp{nullptr};
};

// ---------------------------------------------------------------------------------------------
// CausalLM

CausalLMImpl::CausalLMImpl(const TransformerConfig& config, const at::TensorOptions& options)
    : config_(config), dtype_(options.dtype().toScalarType()) {
  // Built in float32 on the CPU, then moved: initialisers need not support every dtype.
  const auto o = torch::TensorOptions().dtype(torch::kFloat);
  model_ = register_module("model", std::make_shared<torch::nn::Module>());
  embed_tokens_ = model_->register_module(
      "embed_tokens", torch::nn::Embedding(config.vocab_size, config.hidden_size));
  auto list = model_->register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < config.num_hidden_layers; ++i) {
    auto layer = std::make_shared<DecoderLayerImpl>(config, o);
    list->push_back(layer);
    layers_.push_back(layer);
    const std::string prefix = "model.layers." + std::to_string(i) + ".";
    auto& attn = layer->self_attn;
    auto& mlp = layer->mlp;
    sites_.push_back({prefix + "self_attn.q_proj", "q_proj", attn->q_proj});
    sites_.push_back({prefix + "self_attn.k_proj", "k_proj", attn->k_proj});
    sites_.push_back({prefix + "self_attn.v_proj", "v_proj", attn->v_proj});
    sites_.push_back({prefix + "self_attn.o_proj", "o_proj", attn->o_proj});
    sites_.push_back({prefix + "mlp.gate_proj", "gate_proj", mlp->gate_proj});
    sites_.push_back({prefix + "mlp.up_proj", "up_proj", mlp->up_proj});
    sites_.push_back({prefix + "mlp.down_proj", "down_proj", mlp->down_proj});
  }
  norm_ = model_->register_module("norm", RMSNorm(config.hidden_size, config.rms_norm_eps, o));
  if (!config.tie_word_embeddings) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(config.hidden_size));
    auto lm_head = register_module("lm_head", std::make_shared<torch::nn::Module>());
    lm_head_weight_ = lm_head->register_parameter(
        "weight", torch::empty({config.vocab_size, config.hidden_size}, o).uniform_(-bound, bound));
  }
  // transformers: inv_freq = 1 / theta^(2i / d), kept in float32.
  inv_freq_ =
      1.0 / torch::pow(config.rope_theta,
                       torch::arange(0, config.head_dim, 2, torch::kLong).to(torch::kFloat) /
                           static_cast<double>(config.head_dim));
  to(options.device(), dtype_);
  inv_freq_ = inv_freq_.to(options.device());
}

at::Device CausalLMImpl::device() const { return embed_tokens_->weight.device(); }

at::Tensor CausalLMImpl::output_weight() const {
  return lm_head_weight_.defined() ? lm_head_weight_ : embed_tokens_->weight;
}

at::Tensor PositionIdsFromMask(const at::Tensor& attention_mask, int64_t t) {
  at::Tensor pos = attention_mask.to(torch::kLong).cumsum(-1) - 1;
  pos = pos.clamp_min(0);
  return pos.narrow(1, pos.size(1) - t, t);
}

at::Tensor CausalLMImpl::Hidden(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                                const at::Tensor& position_ids, KVCache* cache) {
  TORCH_CHECK(input_ids.dim() == 2, "input_ids must be [B, T]");
  const at::Device dev = device();
  const int64_t b = input_ids.size(0);
  const int64_t t = input_ids.size(1);
  const int64_t past = cache != nullptr ? cache->length() : 0;
  const int64_t s = past + t;
  at::Tensor mask;
  if (attention_mask.defined()) {
    TORCH_CHECK(attention_mask.size(0) == b && attention_mask.size(1) == s,
                "attention_mask must be [B, past + T] = [", b, ", ", s, "], got ",
                attention_mask.sizes());
    // A mask without padding adds nothing to the causal one; without it, LibTorch 2 runs the
    // fused causal kernel instead of materialising [B, heads, T, T] scores (24 GiB for two
    // 16k-token rows of Qwen2-1.5B).
    if (!attention_mask.all().item<bool>()) mask = attention_mask.to(dev).to(torch::kBool);
  }
  at::Tensor pos;
  if (position_ids.defined()) {
    pos = position_ids.to(dev);
  } else if (mask.defined()) {
    pos = PositionIdsFromMask(mask, t);
  } else {
    pos = torch::arange(past, s, torch::TensorOptions().dtype(torch::kLong).device(dev))
              .unsqueeze(0)
              .expand({b, t});
  }
  // allowed[b, 0, i, j]: query i (absolute position past + i) may attend to key j. Without
  // padding or a cache it stays the 2-D [T, T] causal mask, which tells the attention that a
  // plain causal kernel will do.
  at::Tensor allowed;
  if (mask.defined() && t == 1) {
    allowed = mask.view({b, 1, 1, s});  // one query at the last position: causal adds nothing
  } else if (mask.defined() || t > 1) {
    auto lo = torch::TensorOptions().dtype(torch::kLong).device(dev);
    at::Tensor causal =
        (torch::arange(t, lo).unsqueeze(1) + past) >= torch::arange(s, lo).unsqueeze(0);
    if (mask.defined()) {
      allowed = causal.view({1, 1, t, s}).logical_and(mask.view({b, 1, 1, s}));
    } else {
      allowed = past == 0 ? causal : causal.view({1, 1, t, s});
    }
  }
  return RunDecoder(input_ids.to(dev), pos, allowed, cache);
}

at::Tensor CausalLMImpl::DecodeHidden(const at::Tensor& input_ids, const at::Tensor& position_ids,
                                      const at::Tensor& allowed, StaticKVCache* cache) {
  TORCH_CHECK(input_ids.dim() == 2 && input_ids.size(1) == 1,
              "DecodeHidden: input_ids must be [B, 1]");
  TORCH_CHECK(allowed.dim() == 2 && allowed.size(1) == cache->capacity(),
              "DecodeHidden: allowed must be [B, capacity]");
  return RunDecoder(input_ids, position_ids, allowed.view({input_ids.size(0), 1, 1, -1}), cache);
}

at::Tensor CausalLMImpl::HiddenPacked(const at::Tensor& input_ids,
                                      const std::vector<int64_t>& lengths) {
  TORCH_CHECK(input_ids.dim() == 1, "packed input_ids must be [N]");
  int64_t n = 0, longest = 0;
  for (const int64_t len : lengths) {
    TORCH_CHECK(len > 0, "packed segment lengths must be positive");
    n += len;
    longest = std::max(longest, len);
  }
  TORCH_CHECK(n == input_ids.size(0), "packed segment lengths sum to ", n, ", input has ",
              input_ids.size(0), " tokens");
  const at::Device dev = device();
  auto lo = torch::TensorOptions().dtype(torch::kLong).device(dev);
  const at::Tensor causal =
      torch::arange(longest, lo).unsqueeze(1) >= torch::arange(longest, lo).unsqueeze(0);
  const at::Tensor pos = SegmentPositions(lengths).to(dev).unsqueeze(0);
  return RunDecoder(input_ids.to(dev).unsqueeze(0), pos, causal, nullptr, &lengths).squeeze(0);
}

at::Tensor CausalLMImpl::RunDecoder(const at::Tensor& input_ids, const at::Tensor& pos,
                                    const at::Tensor& allowed, AttentionCache* cache,
                                    const std::vector<int64_t>* segments) {
  at::Tensor freqs = pos.to(torch::kFloat).unsqueeze(-1) * inv_freq_;  // [B, T, D/2]
  at::Tensor emb = torch::cat({freqs, freqs}, -1);
  at::Tensor cos = emb.cos().to(dtype_).unsqueeze(1);  // [B, 1, T, D]
  at::Tensor sin = emb.sin().to(dtype_).unsqueeze(1);

  const bool training = is_training() && cache == nullptr && at::GradMode::is_enabled();
  at::Tensor h = embed_tokens_(input_ids);
  for (size_t l = 0; l < layers_.size(); ++l) {
    const auto layer = layers_[l];
    const int64_t index = static_cast<int64_t>(l);
    if (!training || index >= checkpoint_layers_) {
      h = layer->forward(h, cos, sin, allowed, cache, index, segments);
      continue;
    }
    std::vector<at::Tensor> trainable;
    for (const auto& p : layer->parameters()) {
      if (p.requires_grad()) trainable.push_back(p);
    }
    if (trainable.empty() && !h.requires_grad()) {
      h = layer->forward(h, cos, sin, allowed, nullptr, index, segments);
      continue;
    }
    // The recomputation runs in backward, after the caller's segment list is gone: keep a copy.
    std::shared_ptr<const std::vector<int64_t>> segs;
    if (segments != nullptr) segs = std::make_shared<const std::vector<int64_t>>(*segments);
    h = CheckpointedForward(
        [layer, cos, sin, allowed, index, segs](const at::Tensor& x) {
          return layer->forward(x, cos, sin, allowed, nullptr, index, segs.get());
        },
        h, trainable);
  }
  return norm_(h);
}

at::Tensor CausalLMImpl::Logits(const at::Tensor& hidden) {
  return torch::matmul(hidden, output_weight().t()).to(torch::kFloat);
}

at::Tensor CausalLMImpl::forward(const at::Tensor& input_ids, const at::Tensor& attention_mask) {
  return Logits(Hidden(input_ids, attention_mask));
}

at::Tensor CausalLMImpl::SelectedLogProbs(const at::Tensor& hidden, const at::Tensor& targets,
                                          int64_t chunk_tokens, double temperature) {
  TORCH_CHECK(chunk_tokens > 0, "chunk_tokens must be positive");
  TORCH_CHECK(temperature > 0, "temperature must be positive");
  return ChunkedSelectedLogProbs(hidden, output_weight(), targets, chunk_tokens, temperature);
}

at::Tensor CausalLMImpl::TokenLogProbs(const at::Tensor& input_ids,
                                       const at::Tensor& attention_mask, int64_t chunk_tokens,
                                       double temperature, const at::Tensor& needed) {
  const int64_t b = input_ids.size(0);
  const int64_t t = input_ids.size(1);
  if (t < 2) return torch::zeros({b, 0}, torch::TensorOptions().device(device()));
  const at::Device dev = device();
  if (needed.defined()) {
    TORCH_CHECK(needed.dim() == 2 && needed.size(0) == b && needed.size(1) == t - 1,
                "needed must be [B, T-1] = [", b, ", ", t - 1, "], got ", needed.sizes());
  }
  // Log-probs of the rows `columns` (flat indices into [B, T-1]) of hidden states `h` scoring
  // `targets`, scattered into [B, T-1] zeros; only the needed ones are computed.
  auto scored = [&](at::Tensor h, at::Tensor targets, at::Tensor columns) {
    if (needed.defined()) {
      const at::Tensor keep = needed.reshape({-1})
                                  .to(columns.device())
                                  .index_select(0, columns)
                                  .ne(0)
                                  .nonzero()
                                  .view({-1});
      h = h.index_select(0, keep.to(h.device()));
      targets = targets.index_select(0, keep.to(targets.device()));
      columns = columns.index_select(0, keep);
    }
    at::Tensor logp = SelectedLogProbs(h, targets.to(dev), chunk_tokens, temperature);
    return torch::zeros({b * (t - 1)}, logp.options())
        .index_copy(0, columns.to(dev), logp)
        .view({b, t - 1});
  };
  if (packing_ && attention_mask.defined() && b > 1) {
    PackedBatch p = PackPaddedBatch(input_ids, attention_mask);
    if (p.input_ids.size(0) < b * t && !p.lengths.empty()) {
      at::Tensor hidden = HiddenPacked(p.input_ids, p.lengths);
      return scored(hidden.index_select(0, p.from.to(dev)), p.target, p.column);
    }
  }
  at::Tensor hidden = Hidden(input_ids, attention_mask);
  at::Tensor h = hidden.narrow(1, 0, t - 1).reshape({-1, config_.hidden_size});
  at::Tensor targets = input_ids.narrow(1, 1, t - 1).reshape({-1}).to(dev);
  if (!needed.defined()) {
    return SelectedLogProbs(h, targets, chunk_tokens, temperature).view({b, t - 1});
  }
  return scored(h, targets, torch::arange(b * (t - 1), torch::TensorOptions().dtype(torch::kLong)));
}

// ---------------------------------------------------------------------------------------------
// Loading and saving

Result<std::shared_ptr<CausalLMImpl>> CausalLMImpl::Load(const std::string& dir,
                                                         const LoadOptions& options) {
  ALLOT_ASSIGN_OR_RETURN(TransformerConfig config, LoadTransformerConfig(dir));
  const std::string dtype_name = options.dtype == "auto" ? config.torch_dtype : options.dtype;
  ALLOT_ASSIGN_OR_RETURN(at::ScalarType dtype, ParseDtypeName(dtype_name));
  at::Device device(torch::kCPU);
  try {
    device = at::Device(options.device);
  } catch (const c10::Error&) {
    return InvalidArgument("model.device: '" + options.device + "' is not a torch device");
  }
  if (device.is_cuda() && !torch::cuda::is_available()) {
    return Unavailable("model.device is '" + options.device + "' but CUDA is not available");
  }
  if (dtype == at::kHalf && device.is_cpu()) {
    spdlog::warn("{}: float16 has no CPU matmul in this LibTorch; computing in float32", dir);
    dtype = at::kFloat;
  }
  namespace fs = std::filesystem;
  const std::string index = dir + "/model.safetensors.index.json";
  const std::string source = fs::exists(index) ? index : dir + "/model.safetensors";
  auto checkpoint = safetensors::ShardedCheckpoint::Open(dir, "model");
  if (!checkpoint.ok()) return checkpoint.status();

  auto model =
      std::make_shared<CausalLMImpl>(config, torch::TensorOptions().dtype(dtype).device(device));
  for (const auto& item : model->named_parameters(/*recurse=*/true)) {
    ALLOT_RETURN_IF_ERROR(LoadInto(*checkpoint, source, item.key(), item.value()));
  }
  model->set_packing(options.packing);
  ALLOT_RETURN_IF_ERROR(
      model->SetGradientCheckpointing(options.gradient_checkpointing, options.checkpoint_layers));
  return model;
}

Status CausalLMImpl::SetGradientCheckpointing(bool on, int64_t layers) {
  const auto total = static_cast<int64_t>(layers_.size());
  if (layers < -1 || layers > total) {
    return InvalidArgument("model.checkpoint_layers: " + std::to_string(layers) +
                           ", but the model has " + std::to_string(total) +
                           " decoder layers (-1 = all of them)");
  }
  if (!on && layers != -1) {
    return InvalidArgument("model.checkpoint_layers: " + std::to_string(layers) +
                           " is set, but model.gradient_checkpointing is off: set it to true "
                           "(or drop checkpoint_layers)");
  }
  checkpoint_layers_ = !on ? 0 : layers == -1 ? total : layers;
  return Status::Ok();
}

Result<std::shared_ptr<CausalLMImpl>> CausalLMImpl::Load(const ModelConfig& config) {
  if (config.path.empty()) return InvalidArgument("model.path: not set");
  LoadOptions options;
  options.dtype = config.dtype;
  options.device = config.device;
  options.packing = config.packing;
  options.gradient_checkpointing = config.gradient_checkpointing;
  options.checkpoint_layers = config.checkpoint_layers;
  return Load(config.path, options);
}

NamedTensors CausalLMImpl::StateTensors(bool merged) const {
  std::map<std::string, const LinearSite*> by_weight;
  for (const auto& site : sites_) by_weight[site.path + ".weight"] = &site;
  NamedTensors out;
  for (const auto& item : named_parameters(/*recurse=*/true)) {
    const std::string& name = item.key();
    if (name.find(".lora_") != std::string::npos) continue;
    auto it = by_weight.find(name);
    if (merged && it != by_weight.end()) {
      out.emplace_back(name, it->second->linear->MergedWeight());
    } else {
      out.emplace_back(name, item.value().detach());
    }
  }
  return out;
}

Status CausalLMImpl::SaveMerged(const std::string& dir, const std::string& dtype) const {
  TransformerConfig config = config_;
  at::ScalarType type = dtype_;
  if (dtype != "auto") {
    ALLOT_ASSIGN_OR_RETURN(type, ParseDtypeName(dtype));
  }
  config.torch_dtype = DtypeName(type);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return InvalidArgument(dir + ": cannot create directory (" + ec.message() + ")");
  NamedTensors tensors = StateTensors(/*merged=*/true);
  for (auto& [name, t] : tensors) t = t.to(torch::kCPU).to(type);
  ALLOT_RETURN_IF_ERROR(WriteTensors(dir + "/model.safetensors", tensors, {{"format", "pt"}}));
  return WriteFileAtomic(dir + "/config.json", config.ToJson());
}

// ---------------------------------------------------------------------------------------------
// LoRA

Result<std::vector<std::string>> ResolveTargetModules(const std::vector<std::string>& names) {
  static const std::vector<std::string> kAll = {"q_proj",    "k_proj",  "v_proj",   "o_proj",
                                                "gate_proj", "up_proj", "down_proj"};
  std::set<std::string> out;
  for (const std::string& name : names) {
    if (name == "all-linear") {
      out.insert(kAll.begin(), kAll.end());
      continue;
    }
    const std::string full = name.size() > 5 && name.ends_with("_proj") ? name : name + "_proj";
    if (std::find(kAll.begin(), kAll.end(), full) == kAll.end()) {
      return InvalidArgument("lora.target_modules: unknown module '" + name +
                             "' (expected q, k, v, o, gate, up, down, their *_proj names, or "
                             "all-linear)");
    }
    out.insert(full);
  }
  if (out.empty()) return InvalidArgument("lora.target_modules: empty");
  std::vector<std::string> ordered;
  for (const auto& k : kAll) {
    if (out.count(k)) ordered.push_back(k);
  }
  return ordered;
}

Status CausalLMImpl::AttachLora(const LoraSpec& spec, const std::vector<std::string>& target_kinds,
                                uint64_t seed) {
  if (spec.r <= 0) return InvalidArgument("lora.r must be positive");
  ALLOT_ASSIGN_OR_RETURN(std::vector<std::string> kinds, ResolveTargetModules(target_kinds));
  DetachLora();
  ++weights_version_;
  for (auto& p : parameters()) p.set_requires_grad(false);
  at::Generator gen = at::detail::createCPUGenerator(seed);
  for (auto& site : sites_) {
    if (std::find(kinds.begin(), kinds.end(), site.kind) == kinds.end()) continue;
    site.linear->AttachLora(spec, &gen);
  }
  return Status::Ok();
}

Status CausalLMImpl::SetLora(const LoraSpec& spec, const std::vector<std::string>& target_kinds,
                             const std::vector<at::Tensor>& tensors) {
  if (spec.r <= 0) return InvalidArgument("lora.r must be positive");
  ALLOT_ASSIGN_OR_RETURN(std::vector<std::string> kinds, ResolveTargetModules(target_kinds));
  size_t sites = 0;
  for (const auto& site : sites_) {
    sites += std::find(kinds.begin(), kinds.end(), site.kind) != kinds.end() ? 1 : 0;
  }
  if (tensors.size() != 2 * sites) {
    return InvalidArgument("LoRA adapter: " + std::to_string(tensors.size()) + " tensors for " +
                           std::to_string(sites) + " adapted projections");
  }
  DetachLora();
  ++weights_version_;
  for (auto& p : parameters()) p.set_requires_grad(false);
  size_t i = 0;
  for (auto& site : sites_) {
    if (std::find(kinds.begin(), kinds.end(), site.kind) == kinds.end()) continue;
    site.linear->SetLora(spec, tensors[i], tensors[i + 1]);
    i += 2;
  }
  return Status::Ok();
}

void CausalLMImpl::DetachLora() {
  ++weights_version_;
  for (auto& site : sites_) site.linear->DetachLora();
}

void CausalLMImpl::MergeLora() {
  ++weights_version_;
  for (auto& site : sites_) site.linear->MergeAndDetach();
}

bool CausalLMImpl::has_lora() const {
  return std::any_of(sites_.begin(), sites_.end(),
                     [](const LinearSite& s) { return s.linear->has_lora(); });
}

void CausalLMImpl::SetLoraDropoutGenerator(const at::Generator& generator) {
  for (auto& site : sites_) site.linear->set_dropout_generator(generator);
}

void CausalLMImpl::SetLoraEnabled(bool enabled) {
  ++weights_version_;
  for (auto& site : sites_) site.linear->set_lora_enabled(enabled);
}

std::vector<at::Tensor> CausalLMImpl::LoraParameters() const {
  std::vector<at::Tensor> out;
  for (const auto& site : sites_) {
    if (!site.linear->has_lora()) continue;
    out.push_back(site.linear->lora_A);
    out.push_back(site.linear->lora_B);
  }
  return out;
}

}  // namespace allot::models
