#include "apps/learner_ranks.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>

#include "trainer/comm/local_launcher.h"

namespace allot::apps {
namespace {

// This process's argv, as the kernel holds it.
Result<std::vector<std::string>> OwnCommandLine() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  if (!in) return Internal("cannot read /proc/self/cmdline");
  const std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> argv;
  std::string arg;
  for (char c : raw) {
    if (c == '\0') {
      argv.push_back(arg);
      arg.clear();
    } else {
      arg.push_back(c);
    }
  }
  if (!arg.empty()) argv.push_back(arg);
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec || argv.empty()) return Internal("cannot find this executable (/proc/self/exe)");
  argv[0] = exe.string();
  return argv;
}

}  // namespace

bool IsDataParallelAlgorithm(const std::string& algorithm) {
  // These engines shard each step's batch over the ranks, sum token-weighted gradients with the
  // communicator and keep run files on rank 0. DQN's single-process engine does not (its
  // actor/learner split, dqn.distributed, scales the rollouts instead).
  return algorithm == "grpo" || algorithm == "sft";
}

int LaunchLocalTrainRanks(const char* command, int nproc) {
  auto env = trainer::comm::ReadDistEnv();
  if (!env.ok() || env->distributed()) {
    std::cerr << "allot " << command << " --nproc: this process is already a rank of a launched "
              << "world (WORLD_SIZE is set); drop --nproc or unset the torchrun variables\n";
    return 1;
  }
  auto argv = OwnCommandLine();
  if (!argv.ok()) {
    std::cerr << "allot " << command << " --nproc: " << argv.status().message() << "\n";
    return 1;
  }
  trainer::comm::LaunchOptions options;
  options.nproc = nproc;
  auto result =
      trainer::comm::LaunchLocalRanks(trainer::comm::WithoutOption(*argv, "--nproc"), options);
  if (!result.ok()) {
    std::cerr << "allot " << command << " --nproc " << nproc << ": " << result.status().message()
              << "\n";
    return 1;
  }
  if (result->exit_code != 0) {
    std::cerr << "allot " << command << " --nproc " << nproc << ": " << result->message
              << "; the other ranks were stopped\n";
  }
  return result->exit_code;
}

Result<RunDirectory> OpenRunOnAllRanks(
    trainer::comm::Communicator& comm, const std::string& root, const std::string& name,
    bool resume, const std::function<Status(const RunDirectory&)>& rank0_setup) {
  if (!comm.distributed()) {
    ALLOT_ASSIGN_OR_RETURN(RunDirectory run, RunDirectory::Open(root, name, resume));
    ALLOT_RETURN_IF_ERROR(rank0_setup(run));
    return run;
  }
  // Rank 0 says "ok" or why it failed; the others follow.
  std::string verdict;
  Result<RunDirectory> run = InvalidArgument("unset");
  if (comm.is_rank0()) {
    run = RunDirectory::Open(root, name, resume);
    Status s = run.ok() ? rank0_setup(*run) : run.status();
    verdict = s.ok() ? "ok" : s.message();
    ALLOT_RETURN_IF_ERROR(comm.BroadcastString(verdict));
    if (!s.ok()) return s;
    return run;
  }
  ALLOT_RETURN_IF_ERROR(comm.BroadcastString(verdict));
  if (verdict != "ok") {
    return Cancelled("rank " + std::to_string(comm.rank()) + ": rank 0 failed: " + verdict);
  }
  // The directory exists now; opening it for resume creates and writes nothing.
  return RunDirectory::Open(root, name, /*resume=*/true);
}

}  // namespace allot::apps
