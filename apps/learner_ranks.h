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

// Runs this process's own command line again as `nproc` local ranks (without --nproc) with the
// torchrun variables set, and returns the exit code of the launch: 0, or the first failing
// rank's status. Refused inside a world that is already launched.
int LaunchLocalTrainRanks(const char* command, int nproc);

// Opens the run directory on every rank of `comm`. Rank 0 opens it as a single process does and
// runs `rank0_setup` (the log file, config.yaml); the other ranks wait for rank 0, then open the
// same directory without creating or writing anything. Rank 0's failure fails every rank.
Result<RunDirectory> OpenRunOnAllRanks(
    trainer::comm::Communicator& comm, const std::string& root, const std::string& name,
    bool resume, const std::function<Status(const RunDirectory&)>& rank0_setup);

}  // namespace allot::apps
