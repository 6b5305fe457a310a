// Runs untrusted Python (the RSTKit "Code Generation and Execution Toolkit", CogER App. D.2:
// "the code runs in a sandbox with restricted libraries and resources") inside bubblewrap.
//
// Containment, layer by layer:
//   - namespaces (bwrap --unshare-all): no network, private pid/ipc/uts; the child dies with us;
//   - file system: only the configured system directories, bound read-only; the root and /dev
//     are bwrap's own and remounted read-only; /tmp is a private, size-capped tmpfs;
//   - resources (setrlimit before exec): CPU seconds, address space, file size, open files,
//     process count. RLIMIT_NPROC does not bind root, so when we run as root the child first
//     drops to an unprivileged uid that no other sandbox run shares (see SandboxConfig);
//   - time: a wall-clock deadline, after which the whole process group is SIGKILLed (and the
//     pid namespace with it);
//   - output: stdout and stderr are each capped; the rest is read and dropped.
//
// Thread-safe: each Run() is independent.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/config/schema.h"
#include "core/status.h"

namespace allot::tools {

struct SandboxConfig {
  std::string python = "/usr/bin/python3";  // the system interpreter, not a user's
  std::string bwrap = "bwrap";              // looked up in PATH unless absolute
  double wall_timeout_s = 10.0;
  int64_t cpu_limit_s = 5;
  int64_t memory_limit_mb = 512;     // RLIMIT_AS of every process in the sandbox
  int64_t max_output_bytes = 16384;  // per stream
  int64_t max_file_size_mb = 8;      // RLIMIT_FSIZE
  int64_t tmp_size_mb = 32;          // the private /tmp
  int64_t max_processes = 16;        // RLIMIT_NPROC for the sandbox's uid
  int64_t max_code_bytes = 65536;
  // Host directories visible read-only inside (missing ones are skipped).
  std::vector<std::string> ro_binds = {"/usr", "/bin", "/lib", "/lib64", "/etc"};
  // When started as root, the child runs as uid_base + (a per-run number mod uid_range), so
  // that RLIMIT_NPROC counts only that run's processes.
  int64_t uid_base = 1500000;
  int64_t uid_range = 100000;

  void Describe(config::Visitor& v) {
    v.Field("python", python, {.doc = "Python interpreter run inside the sandbox"});
    v.Field("bwrap", bwrap, {.doc = "bubblewrap executable"});
    v.Field("wall_timeout_s", wall_timeout_s, {.doc = "wall-clock limit per run", .min = 0.1});
    v.Field("cpu_limit_s", cpu_limit_s, {.doc = "CPU seconds per process", .min = 1});
    v.Field("memory_limit_mb", memory_limit_mb, {.doc = "address space per process", .min = 64});
    v.Field("max_output_bytes", max_output_bytes, {.doc = "kept per stream", .min = 256});
    v.Field("max_file_size_mb", max_file_size_mb, {.doc = "largest file written", .min = 1});
    v.Field("tmp_size_mb", tmp_size_mb, {.doc = "size of the private /tmp", .min = 1});
    v.Field("max_processes", max_processes, {.doc = "processes of the sandbox uid", .min = 4});
    v.Field("max_code_bytes", max_code_bytes, {.doc = "largest program accepted", .min = 1});
    v.Field("ro_binds", ro_binds, {.doc = "host directories bound read-only"});
    v.Field("uid_base", uid_base, {.doc = "first uid used when running as root", .min = 1});
    v.Field("uid_range", uid_range, {.doc = "number of uids to rotate through", .min = 1});
  }
};

struct ExecResult {
  int exit_code = -1;   // when the process exited normally
  int term_signal = 0;  // when a signal ended it (SIGKILL on timeout, SIGXCPU on CPU limit)
  bool timed_out = false;
  bool stdout_truncated = false;
  bool stderr_truncated = false;
  std::string stdout_text;
  std::string stderr_text;
  double wall_s = 0;

  bool ok() const { return !timed_out && term_signal == 0 && exit_code == 0; }
};

class Sandbox {
 public:
  explicit Sandbox(SandboxConfig config);

  // Checks that bwrap and python exist and a trivial program runs (one real sandbox start).
  Status SelfTest() const;

  // Runs `code` with `python -I -c`. A non-OK status means the sandbox could not run the code
  // at all (bad config, bwrap missing, code too large); the program's own failures are in the
  // ExecResult.
  Result<ExecResult> RunPython(std::string_view code, std::string_view stdin_data = {}) const;

  const SandboxConfig& config() const { return config_; }

 private:
  SandboxConfig config_;
};

}  // namespace allot::tools
