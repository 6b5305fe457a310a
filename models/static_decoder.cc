#include "models/static_decoder.h"

#include <torch/torch.h>

#include <spdlog/spdlog.h>

#include "models/causal_lm.h"
#include "models/decode_graph.h"

namespace allot::models {

StaticDecoder::StaticDecoder(CausalLMImpl* model, const KVCache& prefilled, const at::Tensor& mask,
                             int64_t capacity, bool cuda_graph, bool fixed_rows)
    : model_(model),
      cache_(model->config().num_hidden_layers, mask.size(0), model->config().num_key_value_heads,
             capacity, model->config().head_dim,
             torch::TensorOptions().dtype(model->dtype()).device(model->device())),
      length_(mask.size(1)),
      rows_(mask.size(0)),
      fixed_rows_(fixed_rows || cuda_graph),
      use_graph_(cuda_graph) {
  const int64_t b = mask.size(0);
  if (use_graph_) {
    TORCH_CHECK(DecodeGraph::Available() && model->device().is_cuda(),
                "StaticDecoder: CUDA graphs need a CUDA build and a CUDA device, not ",
                model->device());
  }
  TORCH_CHECK(capacity > length_, "StaticDecoder: capacity ", capacity, " leaves no room after ",
              length_, " columns");
  const at::Device dev = model->device();
  cache_.Load(prefilled);
  const at::Tensor real = mask.to(dev).to(torch::kBool);
  allowed_ = torch::zeros({b, capacity}, torch::TensorOptions().dtype(torch::kBool).device(dev));
  allowed_.narrow(1, 0, length_).copy_(real);
  // Position ids count real tokens (PositionIdsFromMask): the next token's is their number.
  positions_ = real.sum(1, /*keepdim=*/true, torch::kLong);
  input_ids_ = torch::zeros({b, 1}, torch::TensorOptions().dtype(torch::kLong).device(dev));
  logits_ = torch::zeros({b, model->config().vocab_size},
                         torch::TensorOptions().dtype(torch::kFloat).device(dev));
}

StaticDecoder::~StaticDecoder() = default;

at::Tensor StaticDecoder::Step(const at::Tensor& tokens) {
  TORCH_CHECK(length_ < capacity(), "StaticDecoder: capacity ", capacity(), " reached");
  TORCH_CHECK(tokens.numel() == rows_, "StaticDecoder: ", tokens.numel(), " tokens for ", rows_,
              " rows");
  input_ids_.narrow(0, 0, rows_).copy_(tokens.view({-1, 1}));
  if (use_graph_) {
    StepWithGraph();
  } else {
    Run();
  }
  ++length_;
  return logits_.narrow(0, 0, rows_);
}

void StaticDecoder::StepWithGraph() {
  if (graph_captured_ && graph_weights_version_ == model_->weights_version()) {
    graph_->Replay();
    return;
  }
  if (graph_captured_) {  // the weights it read moved: capture again after a warm-up
    graph_.reset();
    graph_captured_ = false;
    warmed_up_ = false;
  }
  if (!graph_) graph_ = std::make_unique<DecodeGraph>(model_->device());
  if (!warmed_up_) {
    graph_->WarmUp([this] { Run(); });
    warmed_up_ = true;
    return;
  }
  try {
    graph_->Capture([this] { Run(); });
  } catch (const std::exception& e) {
    spdlog::warn("decode: CUDA graph capture failed, decoding without graphs: {}", e.what());
    graph_.reset();
    use_graph_ = false;
    Run();  // capture records without running: the step is still to do
    return;
  }
  graph_captured_ = true;
  graph_weights_version_ = model_->weights_version();
  graph_->Replay();
}

void StaticDecoder::Run() {
  allowed_.index_fill_(1, cache_.position(), true);
  at::Tensor hidden = model_->DecodeHidden(input_ids_, positions_, allowed_, &cache_);
  logits_.copy_(model_->Logits(hidden.select(1, 0)));
  cache_.Advance();
  positions_.add_(1);
}

void StaticDecoder::Select(const at::Tensor& batch_indices) {
  const at::Tensor idx = batch_indices.to(allowed_.device());
  if (fixed_rows_) {
    // In place: the first rows take the kept ones, the buffers stay where they are.
    const int64_t n = idx.size(0);
    cache_.SelectInPlace(idx);
    for (at::Tensor* t : {&allowed_, &positions_, &input_ids_, &logits_}) {
      t->narrow(0, 0, n).copy_(t->index_select(0, idx));
    }
    rows_ = n;
    return;
  }
  rows_ = idx.size(0);
  cache_.Select(idx);
  allowed_ = allowed_.index_select(0, idx);
  positions_ = positions_.index_select(0, idx);
  input_ids_ = input_ids_.index_select(0, idx);
  logits_ = logits_.index_select(0, idx);
}

std::vector<std::pair<at::Tensor, at::Tensor>> StaticDecoder::Contents() const {
  std::vector<std::pair<at::Tensor, at::Tensor>> out;
  for (int64_t l = 0; l < model_->config().num_hidden_layers; ++l) {
    out.emplace_back(cache_.keys(l).narrow(0, 0, rows_).narrow(2, 0, length_),
                     cache_.values(l).narrow(0, 0, rows_).narrow(2, 0, length_));
  }
  return out;
}

at::Tensor StaticDecoder::Mask() const {
  return allowed_.narrow(0, 0, rows_).narrow(1, 0, length_);
}

}  // namespace allot::models
