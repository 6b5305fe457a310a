// The single-host launcher behind `allot train --nproc N`: runs N copies of a command as learner
// ranks 0..N-1 with the torchrun variables set (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
// MASTER_ADDR, MASTER_PORT), forwards SIGINT/SIGTERM/SIGHUP to them, and waits. The first rank
// that fails stops the others (SIGTERM, then SIGKILL after a grace period) and its status is the
// launcher's. Multi-host launches set the same variables from SLURM or Kubernetes instead
// (docs/launch/).
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace allot::trainer::comm {

struct LaunchOptions {
  int nproc = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;         // 0: a free port on master_addr
  double stop_grace_s = 10.0;  // SIGTERM -> SIGKILL for the other ranks after a failure
};

// What the launch came to. exit_code is 0 when every rank exited 0; otherwise the first failing
// rank's exit status, or 128 + signal when it was killed by a signal.
struct LaunchResult {
  int exit_code = 0;
  int failed_rank = -1;
  std::string message;  // "rank 1 exited with status 3" (empty on success)
};

// Runs `argv` (argv[0] a path to an executable) as options.nproc ranks. Errors are failures to
// start (fork, exec, no free port); a rank that fails is a LaunchResult, not an error.
Result<LaunchResult> LaunchLocalRanks(const std::vector<std::string>& argv,
                                      const LaunchOptions& options);

// A TCP port that was free on `addr` a moment ago.
Result<int> FreeTcpPort(const std::string& addr);

// argv without "--name VALUE" and "--name=VALUE" (how the ranks are told not to launch again).
std::vector<std::string> WithoutOption(const std::vector<std::string>& argv,
                                       const std::string& name);

}  // namespace allot::trainer::comm
