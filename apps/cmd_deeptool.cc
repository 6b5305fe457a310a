// allot deeptool: DeepTool's data tools.
//   steps    every step of each expert trajectory as its own instance, with the ground-truth
//            history as context (DeepTool Sec. 2.3.1, Eq. 5): the RL data of env deeptool
//   sft      the same instances as prompt/completion SFT records in the env's text layout
//            (observations only ever in the prompt, so they carry no loss): the cold start
//   perturb  MOSAIC perturbations (Sec. 2.1, Eq. 3-4): intrinsic (a corrupted action whose
//            observation is the traceback it produces in the sandbox) and extrinsic (the
//            environment fails), with probability 0.1 for SFT data and 0.2 for RL data
#include <CLI/CLI.hpp>

#include <iostream>

#include "apps/commands.h"
#include "envs/deeptool/deeptool_env.h"
#include "envs/deeptool/mosaic.h"
#include "envs/deeptool/step_instances.h"
#include "envs/runtime/prompt_template.h"
#include "tools/rstkit.h"

namespace allot::apps {

void AddDeepToolCommands(CLI::App& app, int* exit_code) {
  CLI::App* dt =
      app.add_subcommand("deeptool", "DeepTool's data tools (step instances, SFT records, MOSAIC)");
  dt->require_subcommand(1);

  struct StepsArgs {
    std::string in, out;
    bool keep_intrinsic = false;
  };
  auto s = std::make_shared<StepsArgs>();
  CLI::App* steps = dt->add_subcommand(
      "steps",
      "One instance per step of each expert trajectory, the ground-truth history as context");
  steps->add_option("--in", s->in, "expert trajectories (JSONL)")->required();
  steps->add_option("--out", s->out, "step instances (JSONL)")->required();
  steps->add_flag("--keep-intrinsic-targets", s->keep_intrinsic,
                  "also make targets of steps MOSAIC corrupted on purpose");
  steps->callback([=] {
    auto stats = envs::deeptool::WriteStepInstances(s->in, s->out,
                                                    {.skip_intrinsic_targets = !s->keep_intrinsic});
    if (!stats.ok()) {
      std::cerr << "allot deeptool steps: " << stats.status().ToString() << "\n";
      *exit_code = kExitError;
      return;
    }
    std::cout << "wrote " << stats->instances << " step instances from " << stats->trajectories
              << " trajectories to " << s->out;
    if (stats->skipped_targets > 0) {
      std::cout << " (" << stats->skipped_targets << " corrupted steps kept as history only)";
    }
    std::cout << "\n";
  });

  struct SftArgs {
    std::string in, out, prompt = "configs/prompts/deeptool/tir.txt";
    bool keep_intrinsic = false;
  };
  auto f = std::make_shared<SftArgs>();
  CLI::App* sft = dt->add_subcommand(
      "sft", "Prompt/completion SFT records, one per step, in the env's text layout");
  sft->add_option("--in", f->in, "expert trajectories (JSONL)")->required();
  sft->add_option("--out", f->out, "SFT records (JSONL, sft.format: prompt_completion)")
      ->required();
  sft->add_option("--prompt", f->prompt, "the TIR prompt template ({{question}})")
      ->default_val(f->prompt);
  sft->add_flag("--keep-intrinsic-targets", f->keep_intrinsic,
                "also train on steps MOSAIC corrupted on purpose");
  sft->callback([=] {
    envs::deeptool::SftLayout layout;
    auto tmpl = envs::runtime::LoadTemplateFile(f->prompt);
    if (!tmpl.ok()) {
      std::cerr << "allot deeptool sft: " << tmpl.status().ToString() << "\n";
      *exit_code = kExitError;
      return;
    }
    layout.tir_template = std::move(tmpl).value();
    auto stats = envs::deeptool::WriteStepSftRecords(
        f->in, f->out, layout, {.skip_intrinsic_targets = !f->keep_intrinsic});
    if (!stats.ok()) {
      std::cerr << "allot deeptool sft: " << stats.status().ToString() << "\n";
      *exit_code = kExitError;
      return;
    }
    std::cout << "wrote " << stats->instances << " SFT records from " << stats->trajectories
              << " trajectories to " << f->out << "\n";
  });

  struct PerturbArgs {
    std::string in, out, split = "sft";
    double probability = -1.0;
    envs::deeptool::MosaicConfig config;
    tools::SandboxConfig sandbox;
  };
  auto p = std::make_shared<PerturbArgs>();
  CLI::App* perturb = dt->add_subcommand(
      "perturb", "MOSAIC: inject intrinsic (traceback) and extrinsic (timeout) failures");
  perturb->add_option("--in", p->in, "expert trajectories (JSONL)")->required();
  perturb->add_option("--out", p->out, "perturbed trajectories (JSONL)")->required();
  perturb->add_option("--split", p->split, "sft (probability 0.1) or rl (0.2), App. A.1")
      ->check(CLI::IsMember({"sft", "rl"}))
      ->default_val("sft");
  perturb
      ->add_option("--probability", p->probability, "per intermediate step; overrides the split's")
      ->check(CLI::Range(0.0, 1.0));
  perturb
      ->add_option("--intrinsic-share", p->config.intrinsic_share,
                   "share of perturbations that corrupt the action")
      ->check(CLI::Range(0.0, 1.0))
      ->default_val(p->config.intrinsic_share);
  perturb->add_option("--seed", p->config.seed, "seed of the perturbation draws")
      ->default_val(p->config.seed);
  perturb->add_option("--python", p->sandbox.python, "interpreter run inside the sandbox")
      ->default_val(p->sandbox.python);
  perturb->add_option("--timeout", p->sandbox.wall_timeout_s, "sandbox wall time per run (s)")
      ->default_val(p->sandbox.wall_timeout_s);
  perturb->callback([=] {
    envs::deeptool::MosaicConfig config = p->config;
    config.probability = p->probability >= 0.0 ? p->probability
                         : p->split == "rl"    ? envs::deeptool::kMosaicRlProbability
                                               : envs::deeptool::kMosaicSftProbability;
    tools::ToolsConfig tc;
    tc.arithmetic = tc.symbolic = tc.statistics = false;
    tc.sandbox = p->sandbox;
    auto registry = tools::BuildRstKit(tc);
    if (!registry.ok()) {
      std::cerr << "allot deeptool perturb: " << registry.status().ToString() << "\n";
      *exit_code = kExitError;
      return;
    }
    const tools::ToolRegistry* reg = registry->get();
    const size_t max_chars = 4096;
    envs::deeptool::CodeRunner run =
        [reg, max_chars](const std::string& code) -> Result<envs::deeptool::CodeOutcome> {
      tools::ToolResult r = reg->Call({"execute_python", {{"code", code}}});
      if (!r.ok && r.output.is_string()) {
        return Unavailable("execute_python: " + r.output.get<std::string>());
      }
      return envs::deeptool::CodeOutcome{r.ok, envs::deeptool::ObservationText(r, max_chars)};
    };
    auto stats = envs::deeptool::WritePerturbed(p->in, p->out, config, run);
    if (!stats.ok()) {
      std::cerr << "allot deeptool perturb: " << stats.status().ToString() << "\n";
      *exit_code = kExitError;
      return;
    }
    std::cout << "perturbed " << stats->intrinsic << " intrinsic and " << stats->extrinsic
              << " extrinsic of " << stats->code_steps << " code steps in " << stats->trajectories
              << " trajectories (p = " << config.probability << ", seed " << config.seed << ") to "
              << p->out << "\n";
  });
}

}  // namespace allot::apps
