#include "models/dueling_qnet.h"

#include <torch/torch.h>

namespace allot::models {

DuelingQNetImpl::DuelingQNetImpl(const DuelingQNetOptions& o) : options_(o) {
  trunk_ = register_module("trunk", torch::nn::Linear(o.state_dim, o.hidden));
  adv_hidden_ = register_module("adv_hidden", torch::nn::Linear(o.hidden, o.hidden));
  adv_out_ = register_module("adv_out", torch::nn::Linear(o.hidden, o.num_actions));
  value_hidden_ = register_module("value_hidden", torch::nn::Linear(o.hidden, o.hidden));
  value_out_ = register_module("value_out", torch::nn::Linear(o.hidden, 1));
}

at::Tensor DuelingQNetImpl::forward(const at::Tensor& state) {
  auto x = (state - options_.input_offset) / options_.input_scale;
  auto h = torch::relu(trunk_->forward(x));
  auto a = adv_out_->forward(torch::relu(adv_hidden_->forward(h)));
  auto v = value_out_->forward(torch::relu(value_hidden_->forward(h)));
  return v + a - a.mean(/*dim=*/1, /*keepdim=*/true);
}

std::vector<std::string> DuelingQNetImpl::ParameterNames() {
  return {"trunk.weight",        "trunk.bias",         "adv_hidden.weight", "adv_hidden.bias",
          "adv_out.weight",      "adv_out.bias",       "value_hidden.weight",
          "value_hidden.bias",   "value_out.weight",   "value_out.bias"};
}

int64_t CountParameters(torch::nn::Module& module) {
  int64_t n = 0;
  for (const auto& p : module.parameters()) n += p.numel();
  return n;
}

}  // namespace allot::models
