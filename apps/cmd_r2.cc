// allot r2 decomposer-data | allocator-data: R2-Reasoner's SFT data tools (App. B). Each reads
// JSONL (envs/r2/sft_data.h has the line formats) and writes {"prompt", "completion"} JSONL
// that `allot sft` trains the role on.
#include <CLI/CLI.hpp>

#include <fstream>
#include <iostream>
#include <memory>

#include "apps/allot_config.h"
#include "apps/commands.h"
#include "envs/r2/sft_data.h"
#include "llm/client.h"

namespace allot::apps {
namespace {

struct R2DataArgs {
  std::string config = "configs/r2.yaml";
  std::vector<std::string> overrides;
  std::string in, out;
  std::string baseline;
  bool skip_bad_lines = false;
  bool only_correct = false;
  envs::r2::DecompositionWeights weights;
  envs::r2::DifficultyConfig difficulty;
  envs::r2::GroupedSearchConfig search;
};

// `offline`: the tool calls no endpoint (decomposer-data), so no API key is needed.
Result<std::unique_ptr<envs::r2::R2Env>> EnvFromRecipe(const R2DataArgs& a, bool offline) {
  // The tools read the env, the pool and its prices: the recipe's model path and data are the
  // trainer's required keys, and an offline tool calls no endpoint.
  const std::vector<std::string> read =
      offline ? std::vector<std::string>{"env", "gpu", "rewards"}
              : std::vector<std::string>{"env", "endpoints", "gpu", "rewards"};
  ALLOT_ASSIGN_OR_RETURN(LoadedConfig loaded, LoadConfig(a.config, a.overrides, &read));
  envs::r2::R2EnvConfig c;
  c.r2 = loaded.config.env.r2;
  c.endpoints = loaded.config.endpoints;
  if (offline) {
    for (llm::EndpointConfig& e : c.endpoints) {
      e.api_key.clear();
      e.api_key_env.clear();
      // A URL the recipe requires and the user left unset: never dialled here, but the env
      // checks every endpoint's URL. The reserved .invalid domain resolves nowhere.
      if (e.base_url.empty()) e.base_url = "http://offline.invalid";
    }
  }
  c.gpu = loaded.config.gpu;
  c.rewards.terms = {{"accuracy", 1.0}};  // the tools grade with Acc alone (Eq. 6)
  c.rewards.answer = loaded.config.rewards.answer;
  return envs::r2::R2Env::Create(std::move(c));
}

// Runs `one` on every non-empty line of a.in and writes what it returns to a.out; an empty
// string drops the line (counted and reported).
int Convert(const char* command, const R2DataArgs& a,
            const std::function<Result<std::string>(const std::string&, const std::string&)>& one) {
  auto fail = [&](const std::string& what) {
    std::cerr << "allot r2 " << command << ": " << what << "\n";
    return kExitError;
  };
  std::ifstream in(a.in);
  if (!in) return fail(a.in + ": cannot open");
  std::ofstream out(a.out, std::ios::trunc);
  if (!out) return fail(a.out + ": cannot create");
  std::string line;
  int64_t n = 0, written = 0, skipped = 0, dropped = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    Result<std::string> r = one(line, a.in + ":" + std::to_string(n));
    if (!r.ok()) {
      if (!a.skip_bad_lines) return fail(r.status().message());
      std::cerr << "skipped " << r.status().message() << "\n";
      ++skipped;
      continue;
    }
    if (r->empty()) {
      ++dropped;
      continue;
    }
    out << *r << "\n";
    ++written;
  }
  out.close();
  if (!out) return fail(a.out + ": write failed");
  std::cout << "wrote " << written << " examples to " << a.out;
  if (skipped > 0) std::cout << " (" << skipped << " bad lines skipped)";
  if (dropped > 0) std::cout << " (" << dropped << " lines dropped: no correct allocation)";
  std::cout << "\n";
  return kExitOk;
}

void CommonOptions(CLI::App* c, R2DataArgs* a) {
  c->add_option("-c,--config", a->config, "recipe with env.r2 and the endpoint pool")
      ->default_val(a->config);
  c->add_option("--set", a->overrides, "override a config value (key=value)");
  c->add_option("-i,--in", a->in, "input JSONL")->required();
  c->add_option("-o,--out", a->out, "output SFT JSONL")->required();
  c->add_flag("--skip-bad-lines", a->skip_bad_lines, "report and skip lines that fail");
}

}  // namespace

void AddR2Commands(CLI::App& app, int* exit_code) {
  CLI::App* r2 = app.add_subcommand("r2", "R2-Reasoner's SFT data tools (App. B)");
  r2->require_subcommand(1);
  auto a = std::make_shared<R2DataArgs>();

  CLI::App* dec = r2->add_subcommand("decomposer-data",
                                     "Pick d* of each task's candidate decompositions (Eq. 2-4)");
  CommonOptions(dec, a.get());
  dec->add_option("--w-c", a->weights.w_c, "weight of the subtask count")->default_val(100.0);
  dec->add_option("--w-p", a->weights.w_p, "weight of M_eval's tokens")->default_val(1.0);
  dec->add_option("--w-d", a->weights.w_d, "weight of the incoherent-pair ratio")
      ->default_val(1000.0);
  dec->callback([=] {
    auto env = EnvFromRecipe(*a, /*offline=*/true);
    if (!env.ok()) {
      std::cerr << "allot r2 decomposer-data: " << env.status().message() << "\n";
      *exit_code = kExitError;
      return;
    }
    *exit_code =
        Convert("decomposer-data", *a,
                [&](const std::string& line, const std::string& where) -> Result<std::string> {
                  ALLOT_ASSIGN_OR_RETURN(
                      envs::r2::DecomposerExample e,
                      envs::r2::DecomposerExampleFromLine(line, **env, a->weights, where));
                  return envs::r2::SftLine(e.prompt, e.completion);
                });
  });

  CLI::App* alloc = r2->add_subcommand(
      "allocator-data", "Label subtask allocations by the grouped search on the pool (Eq. 6-10)");
  CommonOptions(alloc, a.get());
  alloc->add_option("--alpha", a->difficulty.alpha, "quantile of the token probabilities")
      ->default_val(0.3);
  alloc->add_option("--tau-easy", a->difficulty.tau_easy, "p >= tau_easy: easy")->default_val(0.8);
  alloc->add_option("--tau-hard", a->difficulty.tau_hard, "p <= tau_hard: hard")->default_val(0.52);
  alloc->add_option("--max-iterations", a->search.max_iterations, "N_iter_alloc")->default_val(20);
  alloc->add_flag("--only-correct", a->only_correct,
                  "drop the tasks no allocation answered correctly within --max-iterations "
                  "(by default they keep the search's last allocation)");
  alloc->add_option("--baseline", a->baseline,
                    "endpoint whose token log-probs give the difficulty of lines without any");
  alloc->callback([=] {
    auto env = EnvFromRecipe(*a, /*offline=*/false);
    if (!env.ok()) {
      std::cerr << "allot r2 allocator-data: " << env.status().message() << "\n";
      *exit_code = kExitError;
      return;
    }
    if (!a->baseline.empty() && (*env)->client().endpoint(a->baseline) == nullptr) {
      std::cerr << "allot r2 allocator-data: --baseline: no endpoint '" << a->baseline
                << "' in the recipe\n";
      *exit_code = kExitError;
      return;
    }
    *exit_code = Convert(
        "allocator-data", *a,
        [&](const std::string& line, const std::string& where) -> Result<std::string> {
          ALLOT_ASSIGN_OR_RETURN(envs::r2::AllocatorExample e,
                                 envs::r2::AllocatorExampleFromLine(line, **env, a->difficulty,
                                                                    a->search, where, a->baseline));
          if (a->only_correct && !e.search.correct) return std::string();
          return envs::r2::SftLine(e.prompt, e.completion);
        });
  });
}

}  // namespace allot::apps
