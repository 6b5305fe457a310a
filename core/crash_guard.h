// Last line of defence for a command-line process: an exception that escapes every handler
// becomes one line on stderr naming the command and a non-zero exit, never a SIGABRT and a core
// dump. Expected failures still travel as Status; this only catches what slipped through.
#pragma once

#include <functional>
#include <ostream>
#include <string>

namespace allot {

// Runs `body` and returns its exit code. An escaped exception prints
// "allot <command>: internal error: <what>" to `err` and returns `error_code`.
int RunGuarded(const std::string& command, const std::function<int()>& body, std::ostream& err,
               int error_code);

// Installs a std::terminate handler that does the same for an exception escaping a thread (or a
// noexcept function): it prints the line to stderr and calls _exit(error_code). Call once,
// early in main, before threads start; `command` names the subcommand in the message.
void InstallTerminateHandler(const std::string& command, int error_code);

}  // namespace allot
