// Gradient checkpointing of one layer (Chen et al., 2016, "Training Deep Nets with Sublinear
// Memory Cost"): run the layer without recording its graph, keep only its input, and run it
// again with a graph in backward. A decoder layer's activations (attention scores and
// probabilities, MLP intermediates) then live only while that layer's backward runs, for one
// extra forward pass per layer. LibTorch 1.13's C++ API has no torch.utils.checkpoint; this is
// the same contract as its non-reentrant form.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <vector>

namespace allot::models {

// y = layer(x), with gradients for `x` and for `params` (the layer's parameters that require
// grad, e.g. its LoRA A and B) computed by re-running `layer` in backward. `layer` must be a pure
// function of x, its parameters and tensors it captured without grad (masks, RoPE tables); it
// must stay callable until backward has run. Random draws inside it (dropout) repeat exactly:
// the default generator's state at the first run is restored for the second.
at::Tensor CheckpointedForward(std::function<at::Tensor(const at::Tensor&)> layer,
                               const at::Tensor& x, const std::vector<at::Tensor>& params);

}  // namespace allot::models
