// NavigatorMlp: the DuelingQNet forward pass in plain C++ on float weights, without LibTorch.
//
// Rollout workers act with it (the learner publishes weights as safetensors bytes), and the
// learner uses it for single-state action selection, where a LibTorch call would cost more in
// dispatch than the 2.5k multiply-adds it computes.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"

namespace allot::models {

class NavigatorMlp {
 public:
  struct Shape {
    int state_dim = 7;
    int num_actions = 5;
    int hidden = 32;
    float input_offset = 1.5f;
    float input_scale = 1.5f;
  };

  NavigatorMlp() = default;

  // Parses safetensors bytes holding the DuelingQNet parameters (DuelingQNetImpl names), with
  // the input scaling in the metadata ("input_offset", "input_scale"). Checks every shape.
  static Result<NavigatorMlp> FromSafetensors(std::span<const std::byte> bytes,
                                              const std::string& source);

  // From the 10 parameter arrays in DuelingQNetImpl::ParameterNames() order (copied).
  static NavigatorMlp FromArrays(const Shape& shape, const std::array<const float*, 10>& params);

  // q must hold num_actions floats.
  void Forward(std::span<const float> state, std::span<float> q) const;
  int Greedy(std::span<const float> state) const;

  const Shape& shape() const { return shape_; }
  bool empty() const { return trunk_w_.empty(); }

 private:
  Shape shape_;
  std::vector<float> trunk_w_, trunk_b_;
  std::vector<float> adv_h_w_, adv_h_b_, adv_o_w_, adv_o_b_;
  std::vector<float> val_h_w_, val_h_b_, val_o_w_, val_o_b_;
};

}  // namespace allot::models
