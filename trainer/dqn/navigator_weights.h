// NavigatorWeights: the navigator's parameters found wherever a run keeps them, in the one
// canonical form that export, eval and rollout workers share (DuelingQNetImpl's parameter
// names, F32, input scaling in the safetensors metadata).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "models/navigator_mlp.h"

namespace allot::trainer {

struct NavigatorTensor {
  std::string name;  // DuelingQNetImpl::ParameterNames() order
  std::vector<int64_t> shape;
  std::vector<float> values;
};

struct NavigatorWeights {
  models::NavigatorMlp::Shape shape;
  std::vector<NavigatorTensor> tensors;
  std::string source;  // where they came from (for messages and the spec)

  const NavigatorTensor* Find(const std::string& name) const;
  int64_t parameter_count() const;
  // Canonical safetensors bytes (what NavigatorMlp::FromSafetensors and workers read).
  Result<std::string> Serialize() const;
  Result<models::NavigatorMlp> Mlp() const;
};

// Accepts: a .safetensors file with the navigator's tensors, bare or prefixed "online." (a
// checkpoint's navigator.safetensors); a directory holding navigator.safetensors (a finished
// run, an export, or a checkpoint step); or a run directory whose checkpoints/ holds step
// directories (the newest that verifies is used).
Result<NavigatorWeights> LoadNavigatorWeights(const std::string& path);

// Parses safetensors bytes (bare or "online."-prefixed names).
Result<NavigatorWeights> ParseNavigatorWeights(const std::string& bytes, const std::string& source);

// RLoT's block names for the navigator's actions ("reason" ... "terminate"), or action_<i>
// for navigators of other sizes.
std::vector<std::string> NavigatorActionNames(int num_actions);

}  // namespace allot::trainer
