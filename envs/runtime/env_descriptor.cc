#include "envs/runtime/env_descriptor.h"

namespace allot::envs::runtime {

Result<config::ConfigNode> EnvConfigNode(const std::string& env_config,
                                         const EnvDescriptor& descriptor) {
  ALLOT_ASSIGN_OR_RETURN(config::ConfigNode node, config::ParseYaml(env_config, "env_config"));
  ALLOT_RETURN_IF_ERROR(config::InterpolateEnv(node, config::ProcessEnv()));
  if (!node.is_map() || node.Find("env") == nullptr) return node;
  // A whole recipe (what the learners send): the trainer's own sections are not the env's.
  config::ConfigNode view = config::ConfigNode::Map(node.origin());
  if (const config::ConfigNode* env = node.Find("env"); env->is_map()) {
    if (const config::ConfigNode* own = env->Find(descriptor.name); own != nullptr) {
      view.Set(descriptor.name, *own);
    }
  }
  for (const std::string& key : descriptor.sections) {
    if (const config::ConfigNode* n = node.Find(key); n != nullptr) view.Set(key, *n);
  }
  return view;
}

}  // namespace allot::envs::runtime
