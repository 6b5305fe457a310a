// allot: one executable for the whole lifecycle (train, resume, sft, eval, export, serve,
// rollout-worker, config, version).
#include <CLI/CLI.hpp>

#include <iostream>
#include <string>

#include "apps/commands.h"
#include "core/crash_guard.h"
#include "core/library_binding.h"
#include "core/logging.h"

namespace {

// The subcommand named on the command line, for error messages; "" when there is none.
std::string SubcommandName(CLI::App& app, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (!arg.empty() && arg[0] != '-' &&
        !app.get_subcommands([&](CLI::App* s) { return s->get_name() == arg; }).empty()) {
      return arg;
    }
  }
  return "";
}

}  // namespace

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
  allot::apps::AddDeepToolCommands(app, &exit_code);
  allot::apps::AddR2Commands(app, &exit_code);
  allot::apps::AddInfoCommands(app, &exit_code);
  // Commands run inside parse(); anything they let escape, here or on another thread, ends the
  // process with one line and exit code 1 instead of SIGABRT and a core dump.
  const std::string command = SubcommandName(app, argc, argv);
  allot::InstallTerminateHandler(command, allot::apps::kExitError);
  if (!allot::SetupLogging("info").ok()) return allot::apps::kExitError;
  if (const allot::Status s = allot::CheckStdFilesystemBinding(); !s.ok()) {
    std::cerr << "allot: " << s.message() << "\n";
    return allot::apps::kExitError;
  }
  return allot::RunGuarded(
      command,
      [&] {
        try {
          app.parse(argc, argv);
        } catch (const CLI::ParseError& e) {
          return app.exit(e);
        }
        return exit_code;
      },
      std::cerr, allot::apps::kExitError);
}
