// allot: one executable for the whole lifecycle (train, resume, sft, eval, export, serve,
// rollout-worker, config, version).
#include <CLI/CLI.hpp>

#include "apps/commands.h"
#include "core/logging.h"

int main(int argc, char** argv) {
  CLI::App app{"allot: reinforcement learning for the policies that allocate LLM reasoning"};
  app.require_subcommand(1);
  app.set_version_flag("--version", ALLOT_VERSION);
  int exit_code = allot::apps::kExitOk;
  allot::apps::AddRunCommands(app, &exit_code);
  allot::apps::AddServiceCommands(app, &exit_code);
  allot::apps::AddConfigCommands(app, &exit_code);
  allot::apps::AddToolCommands(app, &exit_code);
  allot::apps::AddTinyWorldCommands(app, &exit_code);
  allot::apps::AddInfoCommands(app, &exit_code);
  if (!allot::SetupLogging("info").ok()) return allot::apps::kExitError;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return exit_code;
}
