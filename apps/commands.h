// The `allot` subcommands. Each Add* function registers its subcommands on the CLI11 app; a
// callback stores the process exit code in *exit_code.
#pragma once

namespace CLI {
class App;
}

namespace allot::apps {

inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;      // bad input: config, data, checkpoint
inline constexpr int kExitNotLanded = 2;  // a subcommand whose engine does not exist yet

void AddConfigCommands(CLI::App& app, int* exit_code);   // config validate|print|defaults
void AddRunCommands(CLI::App& app, int* exit_code);      // train, resume, sft, eval, export
void AddServiceCommands(CLI::App& app, int* exit_code);  // serve, rollout-worker
void AddInfoCommands(CLI::App& app, int* exit_code);     // version
void AddToolCommands(CLI::App& app, int* exit_code);     // tokenize, grade
void AddTinyWorldCommands(CLI::App& app, int* exit_code);  // tinyworld generate
void AddDeepToolCommands(CLI::App& app, int* exit_code);   // deeptool steps|sft|perturb
void AddR2Commands(CLI::App& app, int* exit_code);  // r2 decomposer-data|allocator-data

// Prints "allot <command>: <what> has not landed yet" and returns kExitNotLanded.
int NotLanded(const char* command, const char* what);

}  // namespace allot::apps
