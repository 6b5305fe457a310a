#include "envs/runtime/navigator_cache.h"

#include <cstddef>
#include <span>

namespace allot::envs::runtime {

Result<std::shared_ptr<const models::NavigatorMlp>> NavigatorCache::Get(
    const std::shared_ptr<const runtime::PolicySnapshot>& policy) {
  if (policy == nullptr || policy->bytes.empty()) {
    return std::shared_ptr<const models::NavigatorMlp>();
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (cached_ != nullptr && cached_version_ == policy->version) return cached_;
  const std::string source = "policy version " + std::to_string(policy->version);
  if (policy->kind != runtime::PolicySnapshot::Kind::kQnetWeights) {
    return InvalidArgument(source + ": the " + env_name_ + " env needs Q-net weights");
  }
  ALLOT_ASSIGN_OR_RETURN(
      models::NavigatorMlp mlp,
      models::NavigatorMlp::FromSafetensors(
          std::span<const std::byte>(reinterpret_cast<const std::byte*>(policy->bytes.data()),
                                     policy->bytes.size()),
          source));
  if (mlp.shape().state_dim != state_dim_ || mlp.shape().num_actions != num_actions_) {
    return InvalidArgument(source + ": navigator is not " + std::to_string(state_dim_) + " -> " +
                           std::to_string(num_actions_));
  }
  cached_ = std::make_shared<const models::NavigatorMlp>(std::move(mlp));
  cached_version_ = policy->version;
  return cached_;
}

}  // namespace allot::envs::runtime
