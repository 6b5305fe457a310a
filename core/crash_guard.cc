#include "core/crash_guard.h"

#include <unistd.h>

#include <cstdio>
#include <exception>
#include <string>

namespace allot {
namespace {

// Written once by InstallTerminateHandler before any thread starts; read by the handler.
std::string g_command;  // NOLINT(runtime/string)
int g_error_code = 1;

std::string Describe(std::exception_ptr e) {
  if (!e) return "std::terminate called without an active exception";
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    return ex.what();
  } catch (...) {
    return "an exception that is not a std::exception";
  }
}

[[noreturn]] void OnTerminate() {
  const std::string line =
      "allot " + g_command + ": internal error: " + Describe(std::current_exception()) + "\n";
  // No buffered stdio here: another thread may hold its lock.
  const ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
  ::_exit(g_error_code);
}

}  // namespace

int RunGuarded(const std::string& command, const std::function<int()>& body, std::ostream& err,
               int error_code) {
  try {
    return body();
  } catch (...) {
    err << "allot " << command << ": internal error: " << Describe(std::current_exception())
        << "\n";
    err.flush();
    return error_code;
  }
}

void InstallTerminateHandler(const std::string& command, int error_code) {
  g_command = command;
  g_error_code = error_code;
  std::set_terminate(OnTerminate);
}

}  // namespace allot
