// Data-parallel learner ranks in the CLI: `allot train --nproc N` and the run directory shared
// by the ranks of one run (trainer/comm/ has the communicator and the launcher).
#pragma once

#include <functional>
#include <string>

#include "core/run_directory.h"
#include "core/status.h"
#include "trainer/comm/communicator.h"

namespace allot::apps {

// Engines that average gradients over learner ranks (grpo, sft); the others (dqn) train in one
// process.
bool IsDataParallelAlgorithm(const std::string& algorithm);

// How `allot train | sft | resume` runs its learner ranks through the local launcher.
struct RankLaunch {
  const char* command = "train";  // the subcommand, for messages
  int nproc = 1;
  // Restarts after a rank dies: every rank starts again from the newest checkpoint that verifies
  // (core/checkpoint_store.h). Each restart is logged with its cause, on stderr and as a line of
  // RUN/restarts.jsonl.
  int max_restarts = 0;
  std::string run_dir;  // the run's directory (its checkpoints/ and restarts.jsonl)
  // How a restarted rank is told to resume the run: train and sft add this flag to the command
  // line (`--restarted`); resume already resumes (empty).
  std::string restart_flag;
};

// Runs this process's own command line again as `nproc` local ranks (without --nproc and
// --max-restarts, with run.max_restarts=0) with the torchrun variables set, and returns the exit
// code of the launch: 0, or the failing rank's status after the last restart. Refused inside a
// world that is already launched.
int LaunchLocalTrainRanks(const RankLaunch& launch);

// The restart count of a run: --max-restarts when given (>= 0), else run.max_restarts. An error
// names the key when restarts are asked for inside a world some other launcher started (SLURM,
// Kubernetes restart the job themselves).
Result<int> MaxRestarts(int cli_value, int recipe_value);

// Whether this process is a rank of a launched world (the torchrun variables are set).
bool IsLaunchedRank();

// Opens the run directory on every rank of `comm`. Rank 0 opens it as a single process does and
// runs `rank0_setup` (the log file, config.yaml); the other ranks wait for rank 0, then open the
// same directory without creating or writing anything. Rank 0's failure fails every rank.
Result<RunDirectory> OpenRunOnAllRanks(
    trainer::comm::Communicator& comm, const std::string& root, const std::string& name,
    bool resume, const std::function<Status(const RunDirectory&)>& rank0_setup);

}  // namespace allot::apps
