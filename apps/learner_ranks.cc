#include "apps/learner_ranks.h"

#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>

#include "core/checkpoint_store.h"
#include "trainer/comm/dist_env.h"
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

bool IsLaunchedRank() {
  auto env = trainer::comm::ReadDistEnv();
  return !env.ok() || env->distributed() || std::getenv("WORLD_SIZE") != nullptr;
}

Result<int> MaxRestarts(int cli_value, int recipe_value) {
  const int n = cli_value >= 0 ? cli_value : recipe_value;
  if (n > 0 && IsLaunchedRank()) {
    return InvalidArgument(
        std::string(cli_value >= 0 ? "--max-restarts " : "run.max_restarts: ") + std::to_string(n) +
        ": this process is a rank of a world another launcher started (WORLD_SIZE is set); "
        "restarts are the local launcher's (allot train --nproc N), under SLURM or Kubernetes "
        "use the scheduler's restart policy");
  }
  return n;
}

namespace {

std::string UtcNow() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// The launcher's restart policy: from the newest verified checkpoint, logged, or not at all.
Result<std::vector<std::string>> RestartFromCheckpoint(const RankLaunch& launch,
                                                       const std::vector<std::string>& argv,
                                                       const trainer::comm::LaunchResult& failure,
                                                       int restart) {
  const std::string who = std::string("allot ") + launch.command + ": ";
  CheckpointStore store(launch.run_dir + "/checkpoints", /*keep_last=*/0);
  std::vector<std::string> skipped;
  auto latest = store.LoadLatest(&skipped);
  for (const std::string& line : skipped) std::cerr << who << "restart: skipped " << line << "\n";
  if (!latest.ok()) {
    return NotFound("no verified checkpoint in " + launch.run_dir +
                    "/checkpoints to restart from (" + latest.status().message() + ")");
  }
  std::cerr << who << "restart " << restart << " of " << launch.max_restarts << ": "
            << failure.message << "; every rank starts again from " << latest->path << " (step "
            << latest->step << ", verified)\n";
  nlohmann::json record = {{"restart", restart},
                           {"max_restarts", launch.max_restarts},
                           {"time", UtcNow()},
                           {"cause", failure.message},
                           {"failed_rank", failure.failed_rank},
                           {"exit_code", failure.exit_code},
                           {"checkpoint", latest->path},
                           {"step", latest->step},
                           {"skipped", skipped}};
  std::ofstream out(launch.run_dir + "/restarts.jsonl", std::ios::app);
  out << record.dump() << "\n";
  out.flush();
  if (!out) {
    return Internal("cannot append to " + launch.run_dir + "/restarts.jsonl");
  }
  std::vector<std::string> next = argv;
  if (!launch.restart_flag.empty()) next.push_back(launch.restart_flag);
  return next;
}

}  // namespace

int LaunchLocalTrainRanks(const RankLaunch& launch) {
  const std::string who = std::string("allot ") + launch.command;
  if (IsLaunchedRank()) {
    std::cerr << who << " --nproc: this process is already a rank of a launched "
              << "world (WORLD_SIZE is set); drop --nproc or unset the torchrun variables\n";
    return 1;
  }
  auto own = OwnCommandLine();
  if (!own.ok()) {
    std::cerr << who << " --nproc: " << own.status().message() << "\n";
    return 1;
  }
  // The ranks run this command line without the launch's own options; run.max_restarts=0 keeps
  // a recipe's restarts from launching again inside the ranks.
  std::vector<std::string> argv =
      trainer::comm::WithoutOption(trainer::comm::WithoutOption(*own, "--nproc"), "--max-restarts");
  argv.push_back("--set");
  argv.push_back("run.max_restarts=0");
  trainer::comm::LaunchOptions options;
  options.nproc = launch.nproc;
  options.max_restarts = launch.max_restarts;
  options.restart = [&](const trainer::comm::LaunchResult& failure, int restart) {
    return RestartFromCheckpoint(launch, argv, failure, restart);
  };
  auto result = trainer::comm::LaunchLocalRanks(argv, options);
  if (!result.ok()) {
    std::cerr << who << " --nproc " << launch.nproc << ": " << result.status().message() << "\n";
    return 1;
  }
  if (result->exit_code != 0) {
    std::cerr << who << " --nproc " << launch.nproc << ": " << result->message
              << "; the other ranks were stopped";
    if (launch.max_restarts > 0) {
      std::cerr << " (" << result->restarted.size() << " of " << launch.max_restarts
                << " restarts used)";
    }
    std::cerr << "\n";
  } else if (!result->restarted.empty()) {
    std::cerr << who << ": finished after " << result->restarted.size() << " restart"
              << (result->restarted.size() == 1 ? "" : "s") << "\n";
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
