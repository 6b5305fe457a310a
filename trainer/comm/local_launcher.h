// The single-host launcher behind `allot train --nproc N`: runs N copies of a command as learner
// ranks 0..N-1 with the torchrun variables set (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
// MASTER_ADDR, MASTER_PORT), forwards SIGINT/SIGTERM/SIGHUP to them, and waits. The first rank
// that fails stops the others (SIGTERM, then SIGKILL after a grace period) and its status is the
// launcher's. With max_restarts N, a failed launch is started again, all ranks together, up to N
// times (the caller says with what command: `allot train` resumes from the run's last verified
// checkpoint). Multi-host launches set the same variables from SLURM or Kubernetes instead
// (docs/launch/).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/status.h"

namespace allot::trainer::comm {

// What one launch came to. exit_code is 0 when every rank exited 0; otherwise the failing rank's
// exit status, or 128 + signal when it was killed by a signal. Of ranks that end together, one
// killed by a signal is the cause (its peers then fail in their collectives), else the lowest.
struct LaunchResult {
  int exit_code = 0;
  int failed_rank = -1;
  std::string message;  // "rank 1 exited with status 3" (empty on success)
  // Every failed attempt that was started again, oldest first (with restarts; see LaunchOptions).
  std::vector<LaunchResult> restarted;
};

struct LaunchOptions {
  int nproc = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;         // 0: a free port on master_addr (a new one for every attempt)
  double stop_grace_s = 10.0;  // SIGTERM -> SIGKILL for the other ranks after a failure
  // Failed launches started again, all ranks together. A launch stopped by a signal to the
  // launcher (SIGINT, SIGTERM, SIGHUP) is never restarted.
  int max_restarts = 0;
  // Called before restart `restart` (1..max_restarts) with the failure: the command of the new
  // attempt, or an error that ends the launch with that failure (its message is appended). Unset:
  // the same command again.
  std::function<Result<std::vector<std::string>>(const LaunchResult& failure, int restart)> restart;
};

// Runs `argv` (argv[0] a path to an executable) as options.nproc ranks. Errors are failures to
// start (fork, exec, no free port); a rank that fails is a LaunchResult, not an error. With
// restarts the result is the last attempt's, and `restarted` holds the earlier ones.
Result<LaunchResult> LaunchLocalRanks(const std::vector<std::string>& argv,
                                      const LaunchOptions& options);

// A TCP port that was free on `addr` a moment ago.
Result<int> FreeTcpPort(const std::string& addr);

// argv without "--name VALUE" and "--name=VALUE" (how the ranks are told not to launch again).
std::vector<std::string> WithoutOption(const std::vector<std::string>& argv,
                                       const std::string& name);

}  // namespace allot::trainer::comm
