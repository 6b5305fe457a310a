#include "apps/engines.h"

namespace allot::apps {

int RunDqnEngine(RunContext& ctx);
int RunSftEngine(RunContext& ctx);
int RunGrpoEngine(RunContext& ctx);

namespace {

// model.checkpoint_layers narrows model.gradient_checkpointing (grpo and sft); without it, it
// would do nothing.
Status CheckCheckpointLayers(const config::ConfigNode& written, const AllotConfig& cfg,
                             const std::string& source) {
  const config::ConfigNode* model = written.Find("model");
  const config::ConfigNode* n = model == nullptr ? nullptr : model->Find("checkpoint_layers");
  if (n == nullptr || cfg.model.gradient_checkpointing) return Status::Ok();
  return InvalidArgument("config " + source + ":\n  " + n->origin().ToString() +
                         ": model.checkpoint_layers has no effect while "
                         "model.gradient_checkpointing is false");
}

}  // namespace

Status CheckRecipe(const LoadedConfig& loaded, const std::vector<std::string>& overrides,
                   bool resume) {
  config::ConfigNode written = config::ConfigNode::Map(config::Origin{"--set", 0, 0});
  if (!resume) {
    ALLOT_ASSIGN_OR_RETURN(written, config::LoadFile(loaded.source));
  }
  for (const auto& o : overrides) ALLOT_RETURN_IF_ERROR(config::ApplyOverride(written, o));
  const std::string source = resume ? "--set (resume of " + loaded.source + ")" : loaded.source;
  const std::string& algorithm = loaded.config.trainer.algorithm;
  if (algorithm == "dqn") return CheckDqnRecipe(written, source);
  if (algorithm == "grpo" || algorithm == "sft") {
    ALLOT_RETURN_IF_ERROR(CheckCheckpointLayers(written, loaded.config, source));
  }
  if (algorithm == "grpo") return CheckGrpoRecipe(written, loaded.config, source);
  if (algorithm == "sft") return CheckSftRecipe(written, loaded.config, source);
  return Status::Ok();  // no engine: refused by FindTrainEngine
}

TrainEngine FindTrainEngine(const std::string& algorithm) {
  // One engine per trainer.algorithm; anything else is refused before a run directory exists.
  if (algorithm == "dqn") return &RunDqnEngine;
  if (algorithm == "sft") return &RunSftEngine;
  if (algorithm == "grpo") return &RunGrpoEngine;
  return nullptr;
}

}  // namespace allot::apps
