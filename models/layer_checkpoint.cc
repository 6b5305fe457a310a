#include "models/layer_checkpoint.h"

#include <ATen/core/ivalue.h>
#include <torch/torch.h>

#include <mutex>
#include <utility>

namespace allot::models {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// What backward needs besides x: the layer, its trainable parameters and the generator state
// of the first run.
struct LayerRun : torch::CustomClassHolder {
  std::function<at::Tensor(const at::Tensor&)> layer;
  std::vector<at::Tensor> params;
  at::Generator generator;
  at::Tensor generator_state;
};

struct CheckpointFn : public torch::autograd::Function<CheckpointFn> {
  // `params` is an input only so that autograd routes their gradients through this node.
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, at::TensorList params,
                            c10::intrusive_ptr<LayerRun> run) {
    (void)params;
    {
      std::lock_guard<std::mutex> lock(run->generator.mutex());
      run->generator_state = run->generator.get_state();
    }
    at::Tensor y;
    {
      torch::NoGradGuard no_grad;
      y = run->layer(x);
    }
    ctx->save_for_backward({x});
    ctx->saved_data["run"] = c10::IValue::make_capsule(std::move(run));
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto holder = ctx->saved_data["run"].toCapsule();
    auto* run = static_cast<LayerRun*>(holder.get());
    const at::Tensor x = ctx->get_saved_variables()[0].detach().requires_grad_(true);
    at::Tensor after;
    {
      // Replay the first run's random draws, then leave the generator where it was.
      std::lock_guard<std::mutex> lock(run->generator.mutex());
      after = run->generator.get_state();
      run->generator.set_state(run->generator_state);
    }
    at::Tensor y;
    {
      torch::AutoGradMode grad_mode(true);
      y = run->layer(x);
    }
    {
      std::lock_guard<std::mutex> lock(run->generator.mutex());
      run->generator.set_state(after);
    }
    std::vector<at::Tensor> inputs = {x};
    inputs.insert(inputs.end(), run->params.begin(), run->params.end());
    variable_list out = torch::autograd::grad({y}, inputs, {grads[0]}, /*retain_graph=*/false,
                                              /*create_graph=*/false, /*allow_unused=*/true);
    out.emplace_back();  // `run` is an argument of forward too
    return out;
  }
};

}  // namespace

at::Tensor CheckpointedForward(std::function<at::Tensor(const at::Tensor&)> layer,
                               const at::Tensor& x, const std::vector<at::Tensor>& params) {
  auto run = c10::make_intrusive<LayerRun>();
  run->layer = std::move(layer);
  run->params = params;
  run->generator = x.device().is_cuda() ? at::globalContext().defaultGenerator(x.device())
                                        : at::detail::getDefaultCPUGenerator();
  return CheckpointFn::apply(x, at::TensorList(params), run);
}

}  // namespace allot::models
