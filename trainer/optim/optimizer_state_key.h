// The key of a parameter in torch::optim::Optimizer::state(): its TensorImpl's address, as a
// string in LibTorch 1.x and as the pointer itself in LibTorch 2.x.
#pragma once

#include <torch/optim/optimizer.h>

#include <sstream>
#include <string>
#include <type_traits>

namespace allot::trainer {

using OptimizerStateKey =
    std::decay_t<decltype(std::declval<torch::optim::Optimizer&>().state())>::key_type;

namespace internal {
template <typename Key>
Key StateKeyOf(const at::Tensor& p) {
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream s;  // what LibTorch 1.x's c10::guts::to_string wrote
    s << p.unsafeGetTensorImpl();
    return s.str();
  } else {
    return p.unsafeGetTensorImpl();
  }
}
}  // namespace internal

inline OptimizerStateKey StateKey(const at::Tensor& p) {
  return internal::StateKeyOf<OptimizerStateKey>(p);
}

}  // namespace allot::trainer
