// allot train | resume | sft | eval | export
#include <spdlog/spdlog.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <filesystem>
#include <iostream>

#include "apps/allot_config.h"
#include "apps/coger_table.h"
#include "apps/commands.h"
#include "apps/engines.h"
#include "apps/env_catalog.h"
#include "apps/learner_ranks.h"
#include "apps/local_parts.h"
#include "core/config/node.h"
#include "core/logging.h"
#include "core/run_directory.h"
#include "envs/rlot/rlot_eval.h"
#include "envs/rlot/rlot_recipe.h"
#include "trainer/dqn/navigator_eval.h"
#include "trainer/dqn/navigator_export.h"
#include "trainer/export/policy_export.h"

namespace allot::apps {
namespace {

struct TrainArgs {
  std::string config;
  std::vector<std::string> overrides;
  std::string name;
  int nproc = 1;
  int max_restarts = -1;   // -1: run.max_restarts
  bool restarted = false;  // set by the launcher on a restart: resume the run
};

struct ResumeArgs {
  std::string run;
  std::string output_dir = "runs";
  std::vector<std::string> overrides;
  int nproc = 1;
  int max_restarts = -1;
};

int Fail(const char* command, const Status& s) {
  std::cerr << "allot " << command << ": " << s.message() << "\n";
  return kExitError;
}

// `--nproc N` and restarts of train, sft and resume: several ranks are refused for engines that
// train in one process; otherwise this command line runs again as N local ranks, started again
// from the last verified checkpoint when one dies (up to max_restarts times). -1: no launch,
// this process trains.
int MaybeLaunchRanks(const char* command, const AllotConfig& cfg, int nproc, int cli_restarts,
                     const std::string& restart_flag) {
  auto restarts = MaxRestarts(cli_restarts, cfg.run.max_restarts);
  if (!restarts.ok()) return Fail(command, restarts.status());
  if (nproc <= 1 && *restarts == 0) return -1;
  if (nproc > 1 && !IsDataParallelAlgorithm(cfg.trainer.algorithm)) {
    std::cerr << "allot " << command << ": --nproc " << nproc << ": trainer.algorithm "
              << cfg.trainer.algorithm
              << " trains in one learner process (grpo and sft run data-parallel ranks)\n";
    return kExitError;
  }
  RankLaunch launch;
  launch.command = command;
  launch.nproc = nproc;
  launch.max_restarts = *restarts;
  launch.run_dir = (std::filesystem::path(cfg.run.output_dir) / cfg.run.name).string();
  launch.restart_flag = restart_flag;
  return LaunchLocalTrainRanks(launch);
}

int StartRun(const char* command, LoadedConfig& loaded, bool resume) {
  const auto& cfg = loaded.config;
  TrainEngine engine = FindTrainEngine(cfg.trainer.algorithm);
  if (engine == nullptr) {
    const std::string what = "the " + cfg.trainer.algorithm + " trainer";
    return NotLanded(command, what.c_str());
  }
  // A world of one unless the torchrun variables are set (`--nproc`, SLURM, Kubernetes); the
  // engine gets the same communicator from trainer::comm::ProcessCommunicator().
  auto comm = trainer::comm::ProcessCommunicator();
  if (!comm.ok()) return Fail(command, comm.status());
  if ((*comm)->distributed() && !IsDataParallelAlgorithm(cfg.trainer.algorithm)) {
    return Fail(command, InvalidArgument("trainer.algorithm: " + cfg.trainer.algorithm +
                                         " trains in one learner process (WORLD_SIZE=" +
                                         std::to_string((*comm)->world_size()) + ")"));
  }
  // Rank 0 owns the run's files; the other ranks log to the console only.
  auto run = OpenRunOnAllRanks(
      **comm, cfg.run.output_dir, cfg.run.name, resume, [&](const RunDirectory& dir) -> Status {
        ALLOT_RETURN_IF_ERROR(SetupLogging(cfg.logging.level, dir.log_path()));
        if (resume) return Status::Ok();
        ALLOT_ASSIGN_OR_RETURN(std::string yaml, RecipeYaml(loaded));
        return dir.WriteConfig(yaml);
      });
  if (!run.ok()) return Fail(command, run.status());
  if (!(*comm)->is_rank0()) {
    if (Status s = SetupLogging(cfg.logging.level); !s.ok()) return Fail(command, s);
  }
  spdlog::info("{} run '{}' in {} ({})", resume ? "resuming" : "starting", cfg.run.name,
               run->path(), cfg.trainer.algorithm);
  if ((*comm)->distributed()) {
    // One line per rank: which process is which rank (the launcher's messages name ranks).
    spdlog::info("learner rank {} of {} (pid {})", (*comm)->rank(), (*comm)->world_size(),
                 static_cast<long>(::getpid()));
  }
  // The recipe's own servers and workers (rank 0 runs the rollouts): stopped when this returns.
  std::unique_ptr<LocalParts> local;
  if (!loaded.local.empty() && (*comm)->is_rank0()) {
    auto started = LocalParts::Start(
        loaded.local, {run->path() + "/logs", "", true, loaded.source, loaded.overrides},
        loaded.config);
    if (!started.ok()) return Fail(command, started.status());
    local = std::move(*started);
  }
  RunContext ctx{loaded, *run, resume};
  return engine(ctx);
}

int Train(const TrainArgs& a) {
  std::vector<std::string> overrides = a.overrides;
  if (!a.name.empty()) overrides.push_back("run.name=" + a.name);
  auto loaded = LoadConfig(a.config, overrides);
  if (!loaded.ok()) return Fail("train", loaded.status());
  if (Status s = CheckRecipe(*loaded, overrides, /*resume=*/false); !s.ok()) {
    return Fail("train", s);
  }
  // Checked once here rather than by every rank.
  if (!a.restarted) {
    const int launched =
        MaybeLaunchRanks("train", loaded->config, a.nproc, a.max_restarts, "--restarted");
    if (launched >= 0) return launched;
  }
  return StartRun("train", *loaded, /*resume=*/a.restarted);
}

// `allot sft -c RECIPE`: `allot train` with trainer.algorithm forced to sft. A recipe that names
// another algorithm is refused rather than silently retargeted.
int Sft(const TrainArgs& a) {
  auto raw = config::LoadFile(a.config);
  if (!raw.ok()) return Fail("sft", raw.status());
  if (const config::ConfigNode* t = raw->Find("trainer"); t != nullptr) {
    if (const config::ConfigNode* alg = t->Find("algorithm");
        alg != nullptr && alg->is_scalar() && alg->scalar() != "sft") {
      return Fail("sft", InvalidArgument(alg->origin().ToString() + ": trainer.algorithm is " +
                                         alg->scalar() + "; `allot sft` runs sft recipes"));
    }
  }
  std::vector<std::string> overrides = a.overrides;
  overrides.insert(overrides.begin(), "trainer.algorithm=sft");
  if (!a.name.empty()) overrides.push_back("run.name=" + a.name);
  auto loaded = LoadConfig(a.config, overrides);
  if (!loaded.ok()) return Fail("sft", loaded.status());
  if (loaded->config.trainer.algorithm != "sft") {
    return Fail("sft", InvalidArgument("--set trainer.algorithm: `allot sft` runs sft only"));
  }
  if (Status s = CheckRecipe(*loaded, a.overrides, /*resume=*/false); !s.ok()) {
    return Fail("sft", s);
  }
  if (!a.restarted) {
    const int launched =
        MaybeLaunchRanks("sft", loaded->config, a.nproc, a.max_restarts, "--restarted");
    if (launched >= 0) return launched;
  }
  return StartRun("sft", *loaded, /*resume=*/a.restarted);
}

int Resume(const ResumeArgs& a) {
  const std::string config = (std::filesystem::path(a.output_dir) / a.run / "config.yaml").string();
  if (!std::filesystem::exists(config)) {
    return Fail("resume", NotFound("no run at " + config));
  }
  std::vector<std::string> overrides = a.overrides;
  // The run keeps its own name and place even if config.yaml was copied.
  overrides.push_back("run.name=" + a.run);
  overrides.push_back("run.output_dir=" + a.output_dir);
  auto loaded = LoadConfig(config, overrides);
  if (!loaded.ok()) return Fail("resume", loaded.status());
  // The run's own config passed when it started; what this resume changes must pass too.
  if (Status s = CheckRecipe(*loaded, a.overrides, /*resume=*/true); !s.ok()) {
    return Fail("resume", s);
  }
  const int launched = MaybeLaunchRanks("resume", loaded->config, a.nproc, a.max_restarts, "");
  if (launched >= 0) return launched;
  return StartRun("resume", *loaded, /*resume=*/true);
}

// A run name under output_dir, or a path as given (run directory, checkpoint, weights file).
std::string ResolveRun(const std::string& run, const std::string& output_dir) {
  std::error_code ec;
  if (std::filesystem::exists(run, ec)) return run;
  return (std::filesystem::path(output_dir) / run).string();
}

// Where `allot eval` writes the logs of the servers it starts: the run's logs/ (a checkpoint or
// weights file: the logs/ beside it).
std::string EvalLogDir(const std::string& run) {
  std::error_code ec;
  std::filesystem::path dir(run);
  if (std::filesystem::is_regular_file(dir, ec)) dir = dir.parent_path();
  return (dir / "logs").string();
}

struct EvalArgs {
  std::string run;
  std::string output_dir = "runs";
  std::string config;
  std::string json;
  std::string method = "navigator";    // rlot: navigator | direct | fixed:<blocks>
  std::string keep_hard;               // rlot: write the problems answered wrong directly here
  std::string adapter;                 // coger: the router's LoRA adapter on its endpoint
  std::vector<std::string> overrides;  // --set, on top of the config the env is built from
  trainer::NavigatorEvalOptions options;
};

int Eval(const EvalArgs& a) {
  const std::string run = ResolveRun(a.run, a.output_dir);
  // The env the navigator is evaluated in: --config, else the run's own resolved config.
  std::string config = a.config;
  const std::string own = (std::filesystem::path(run) / "config.yaml").string();
  if (config.empty() && std::filesystem::exists(own)) config = own;
  AllotConfig defaults;
  envs::ChainMdpConfig env = defaults.env.chain;
  if (config.empty() && !a.overrides.empty()) {
    return Fail("eval", InvalidArgument("--set " + a.overrides.front() +
                                        ": there is no config to apply it to (give -c RECIPE, "
                                        "or a run directory with its config.yaml)"));
  }
  if (!config.empty()) {
    // The same overrides as the training run's (scripts/quickstart.sh passes its --set to both),
    // so that an evaluation never measures another env than the one trained against.
    auto loaded = LoadConfig(config, a.overrides);
    if (!loaded.ok()) return Fail("eval", loaded.status());
    env = loaded->config.env.chain;
    // CogER: a trained run's before/after table, unless --adapter picks the router to evaluate.
    const bool coger_table = loaded->config.env.name == "coger" && a.adapter.empty() &&
                             (a.method == "navigator" || a.method == "table");
    const std::string trained = coger_table ? PrepareTrainedRouter(*loaded, run) : "";
    std::unique_ptr<LocalParts> local;  // the recipe's own servers, stopped on return
    if (!loaded->local.endpoints.empty()) {
      auto started = LocalParts::Start(loaded->local, {EvalLogDir(run), "eval-", false},
                                       loaded->config);
      if (!started.ok()) return Fail("eval", started.status());
      local = std::move(*started);
    }
    if (coger_table && (!trained.empty() || a.method == "table")) {
      return RunCogerTable(loaded->config, {trained, a.options.episodes, a.options.seed, a.json},
                           std::cout, std::cerr);
    }
    // An LLM env evaluates itself from the recipe (its descriptor); the navigator's envs are
    // evaluated with the trained navigator below.
    const envs::runtime::EnvDescriptor* d = FindEnv(loaded->config.env.name);
    if (d != nullptr && d->evaluate != nullptr) {
      envs::runtime::EvalRequest r;
      r.recipe = ResolvedYaml(*loaded);
      r.recipe_path = loaded->source;
      r.eval_data = loaded->config.eval_data;
      r.method = a.method == "navigator" ? "" : a.method;
      r.adapter = a.adapter;
      r.episodes = a.options.episodes;
      r.seed = a.options.seed;
      r.json = a.json;
      r.out = &std::cout;
      r.err = &std::cerr;
      return d->evaluate(r);
    }
    if (loaded->config.env.name == "rlot") {  // RLoT's LLM env on eval_data
      const AllotConfig& cfg = loaded->config;
      auto rlot = envs::rlot::CompleteRlotEnvConfig(cfg.env.rlot, cfg.endpoints, cfg.rewards.prm,
                                                    cfg.dqn.gamma, loaded->source);
      if (!rlot.ok()) return Fail("eval", rlot.status());
      auto problems = envs::rlot::LoadProblems(cfg.eval_data, "eval_data");
      if (!problems.ok()) return Fail("eval", problems.status());
      if (!a.keep_hard.empty()) {  // the data tool: what the LLM gets wrong when asked directly
        auto env = envs::rlot::RlotEnv::Create(*rlot);
        if (!env.ok()) return Fail("eval", env.status());
        return envs::rlot::RunKeepHardCommand(**env, cfg.eval_data, a.keep_hard, a.options.seed,
                                              std::cout, std::cerr);
      }
      return trainer::RunRlotEval(run, *rlot, *problems, a.options, a.method, a.json);
    }
  }
  return trainer::RunNavigatorEval(run, env, a.options, a.json);
}

// `allot export RUN --format peft | merged` (trainer/export/policy_export.h).
int ExportLlmPolicy(const std::string& run, const std::string& format, const std::string& out,
                    const std::string& base_model, const std::string& dtype) {
  auto checkpoint = trainer::ResolvePolicyCheckpoint(run);
  if (!checkpoint.ok()) return Fail("export", checkpoint.status());
  trainer::PolicyExportOptions options;
  options.format = format;
  options.out = out.empty() ? (std::filesystem::path(run) / "exports" / format).string() : out;
  options.base_model = base_model;
  options.dtype = dtype;
  auto written = trainer::ExportPolicy(*checkpoint, options);
  if (!written.ok()) return Fail("export", written.status());
  std::cout << "wrote " << format << " export of " << *checkpoint << " to " << *written << "\n";
  return kExitOk;
}

}  // namespace

int NotLanded(const char* command, const char* what) {
  std::cerr << "allot " << command << ": " << what
            << " has not landed yet in this version of allot (see docs/architecture.md)\n";
  return kExitNotLanded;
}

static void AddRestartOptions(CLI::App& command, int* max_restarts, bool* restarted) {
  command
      .add_option("--max-restarts", *max_restarts,
                  "when a learner rank dies, stop the others and start every rank again from the "
                  "last verified checkpoint, up to N times (each restart and its cause in "
                  "RUN/restarts.jsonl; default run.max_restarts)")
      ->check(CLI::NonNegativeNumber);
  if (restarted != nullptr) {
    // The launcher's own: a restarted rank resumes the run it was started for.
    command.add_flag("--restarted", *restarted)->group("");
  }
}

void AddRunCommands(CLI::App& app, int* exit_code) {
  auto train = std::make_shared<TrainArgs>();
  CLI::App* t = app.add_subcommand(
      "train",
      "Start a training run from a YAML recipe (engine: trainer.algorithm grpo, dqn or sft). "
      "The recipe is checked whole first; the servers and rollout workers it starts itself "
      "(endpoints[i].serve, rollout.local_workers) run beside the learner and stop with it "
      "(logs: RUN/logs/)");
  t->add_option("-c,--config", train->config, "recipe YAML (configs/*.yaml)")
      ->required()
      ->check(CLI::ExistingFile);
  t->add_option("--set", train->overrides, "dotted override, e.g. --set trainer.total_steps=10");
  t->add_option("--name", train->name, "run name (shortcut for --set run.name=NAME)");
  t->add_option("--nproc", train->nproc, "data-parallel learner processes on this host (grpo, sft)")
      ->check(CLI::PositiveNumber);
  AddRestartOptions(*t, &train->max_restarts, &train->restarted);
  t->callback([=] { *exit_code = Train(*train); });

  auto resume = std::make_shared<ResumeArgs>();
  CLI::App* r = app.add_subcommand(
      "resume",
      "Resume a run from its latest verified checkpoint, with the run's own config.yaml (and "
      "the servers and rollout workers its recipe starts itself)");
  r->add_option("run", resume->run, "run name (its directory under --output-dir)")->required();
  r->add_option("--output-dir", resume->output_dir, "where run directories live");
  r->add_option("--set", resume->overrides, "dotted override applied on top of the run's config");
  r->add_option("--nproc", resume->nproc,
                "data-parallel learner processes on this host (grpo, sft)")
      ->check(CLI::PositiveNumber);
  AddRestartOptions(*r, &resume->max_restarts, nullptr);
  r->callback([=] { *exit_code = Resume(*resume); });

  auto sft_args = std::make_shared<TrainArgs>();
  CLI::App* sft = app.add_subcommand(
      "sft", "Supervised fine-tuning of a policy (train with trainer.algorithm: sft)");
  sft->add_option("-c,--config", sft_args->config, "recipe YAML (configs/sft*.yaml)")
      ->required()
      ->check(CLI::ExistingFile);
  sft->add_option("--set", sft_args->overrides, "dotted override, e.g. --set sft.optim.lr=1e-4");
  sft->add_option("--name", sft_args->name, "run name (shortcut for --set run.name=NAME)");
  sft->add_option("--nproc", sft_args->nproc, "data-parallel learner processes on this host")
      ->check(CLI::PositiveNumber);
  AddRestartOptions(*sft, &sft_args->max_restarts, &sft_args->restarted);
  sft->callback([=] { *exit_code = Sft(*sft_args); });

  auto ev = std::make_shared<EvalArgs>();
  CLI::App* eval = app.add_subcommand(
      "eval",
      "Evaluate a run's policy, or baselines, on its recipe's eval data and print a table: "
      "rlot and chain: the DQN navigator (self-consistency voting over trails); rlot also "
      "direct, CoT or fixed block sequences; coger: the router, fixed levels L1..L4 and random "
      "routing, and for a trained run (RUN/adapters/v<N>) the before/after table: every fixed "
      "level, random routing (expected and one draw), the untrained and the trained router, "
      "with accuracy, failures, cost and energy per query, calls per level and the same per "
      "item difficulty; r2: the decomposer + allocator against each pool model; deeptool: "
      "tool-integrated episodes; atlas: the orchestrator and the integrator. Endpoints the "
      "recipe serves itself (endpoints[i].serve) are started for the evaluation and stopped "
      "after it (logs: RUN/logs/eval-serve-<name>.log)");
  eval->add_option("run", ev->run,
                   "run name, run directory, checkpoint or weights file (the navigator's; the "
                   "LLM envs read only the run's config.yaml, and none with -c)")
      ->required();
  eval->add_option("--output-dir", ev->output_dir, "where run directories live");
  eval->add_option("-c,--config", ev->config, "config for the env (default: the run's own)");
  eval->add_option("--episodes", ev->options.episodes,
                   "problems: the first N of eval_data (chain: episodes of the MDP); default 100")
      ->check(CLI::PositiveNumber);
  eval->add_option("--trails", ev->options.trails,
                   "rlot, chain: trails voted per problem (RLoT: 3)")
      ->check(CLI::PositiveNumber);
  eval->add_option("--epsilon", ev->options.epsilon, "rlot, chain: navigator epsilon, 0 = greedy")
      ->check(CLI::Range(0.0, 1.0));
  eval->add_option("--seed", ev->options.seed,
                   "seed for sampled trails (rlot, chain), random routing (coger) and the solvers' "
                   "samples (atlas)");
  eval->add_option("--json", ev->json, "also write the report as JSON here");
  eval->add_option("--set", ev->overrides,
                   "dotted override of the env's config, e.g. --set env.rlot.llm_endpoint=t2");
  eval->add_option("--method", ev->method,
                   "rlot: navigator, direct, cot, cot-sc, or fixed:<block>-<block> (e.g. "
                   "fixed:reason-refine); "
                   "coger: table (the before/after table; the default for a trained run), "
                   "all, or a list of router, L1..L4, random; "
                   "r2: all, or a list of allocator, pool models and decomposed:<model>; "
                   "deeptool: tir (whole episodes, code run in the sandbox); "
                   "atlas: orchestrator, integrator or all");
  eval->add_option("--keep-hard", ev->keep_hard,
                   "rlot: write the eval_data problems the LLM gets wrong when asked directly "
                   "(RLoT's training set) to this JSONL file");
  eval->add_option("--adapter", ev->adapter,
                   "coger: route with this LoRA adapter of the router endpoint (a trained "
                   "router, e.g. my-run-v40: the last version the grpo run 'my-run' published); "
                   "r2: decompose and allocate with this LoRA adapter of the policy endpoint, "
                   "or with one per role: decomposer=NAME,allocator=NAME; "
                   "deeptool: write the steps with this LoRA adapter of the policy endpoint");
  eval->callback([=] { *exit_code = Eval(*ev); });

  struct ExportArgs {
    std::string run, format = "safetensors", out, output_dir = "runs", base_model;
    std::string dtype = "auto";
  };
  auto ex = std::make_shared<ExportArgs>();
  CLI::App* exp =
      app.add_subcommand("export",
                         "Export a trained policy: the navigator as ONNX or safetensors, an LLM "
                         "policy as a PEFT adapter or merged model");
  exp->add_option("run", ex->run, "run name, run directory, checkpoint or weights file")
      ->required();
  exp->add_option("--format", ex->format,
                  "onnx | safetensors (navigator); peft | merged (LLM policy; hf = merged)")
      ->check(CLI::IsMember({"onnx", "safetensors", "peft", "merged", "hf"}));
  exp->add_option("--out", ex->out, "output directory (default: <run>/exports[/<format>])");
  exp->add_option("--output-dir", ex->output_dir, "where run directories live");
  exp->add_option("--base-model", ex->base_model,
                  "LLM policy: base model directory, instead of the one the checkpoint records");
  exp->add_option("--dtype", ex->dtype, "merged: auto | float32 | bfloat16 | float16")
      ->check(CLI::IsMember({"auto", "float32", "bfloat16", "float16"}));
  exp->callback([=] {
    const std::string run = ResolveRun(ex->run, ex->output_dir);
    if (ex->format == "peft" || ex->format == "merged" || ex->format == "hf") {
      *exit_code = ExportLlmPolicy(run, ex->format == "peft" ? "peft" : "merged", ex->out,
                                   ex->base_model, ex->dtype);
      return;
    }
    const std::string out =
        ex->out.empty() ? (std::filesystem::path(run) / "exports").string() : ex->out;
    *exit_code = trainer::RunExport(run, ex->format, out);
  });
}

}  // namespace allot::apps
