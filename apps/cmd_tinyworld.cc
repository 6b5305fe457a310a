// allot tinyworld generate: writes the tiny world's data -- tasks, knowledge corpus,
// SFT data and a manifest with the sha256 of each file -- from one seed.
#include <CLI/CLI.hpp>

#include <iostream>
#include <nlohmann/json.hpp>

#include "apps/commands.h"
#include "core/atomic_file.h"
#include "tinyworld/task_generator.h"

namespace allot::apps {
namespace {

// Compares the files of a freshly written manifest with a reference one; an empty result
// means they agree byte for byte.
std::string CompareManifests(const std::string& written, const std::string& reference_path) {
  std::string text;
  if (Status s = ReadFile(reference_path, &text); !s.ok()) return s.ToString();
  const nlohmann::json ref = nlohmann::json::parse(text, nullptr, false);
  const nlohmann::json got = nlohmann::json::parse(written, nullptr, false);
  if (ref.is_discarded() || !ref.contains("files")) {
    return reference_path + ": not a tiny-world manifest";
  }
  std::string diff;
  for (const auto& [name, entry] : ref["files"].items()) {
    if (!got["files"].contains(name)) {
      diff += "  " + name + ": missing\n";
    } else if (got["files"][name]["sha256"] != entry["sha256"]) {
      diff += "  " + name + ": sha256 differs from " + reference_path + "\n";
    }
  }
  return diff;
}

}  // namespace

void AddTinyWorldCommands(CLI::App& app, int* exit_code) {
  CLI::App* tw = app.add_subcommand("tinyworld", "The tiny world: allot's own small benchmark");
  tw->require_subcommand(1);
  struct Args {
    std::string out, check;
    tinyworld::TinyWorldConfig config;
  };
  auto a = std::make_shared<Args>();
  CLI::App* gen = tw->add_subcommand(
      "generate",
      "Write the tiny world's data from one seed: tasks (train, test, multiple choice, RLoT's "
      "long sums), the knowledge corpus, the SFT data (sft_train, sft_practice, sft_rlot) and "
      "manifest.json");
  gen->add_option("--out", a->out, "output directory")->required();
  gen->add_option("--seed", a->config.seed, "the seed of the whole world")->default_val(1);
  gen->add_option("--train-per-bucket", a->config.train_per_bucket, "train items per bucket")
      ->default_val(a->config.train_per_bucket);
  gen->add_option("--test-per-bucket", a->config.test_per_bucket, "test items per bucket")
      ->default_val(a->config.test_per_bucket);
  gen->add_option("--long-train", a->config.long_train,
                  "RLoT's long sums for training (long_train.jsonl, sft_rlot.jsonl)")
      ->default_val(a->config.long_train)
      ->check(CLI::NonNegativeNumber);
  gen->add_option("--long-test", a->config.long_test, "RLoT's held-out long sums (long_test.jsonl)")
      ->default_val(a->config.long_test)
      ->check(CLI::NonNegativeNumber);
  gen->add_option("--route-labels", a->config.sft.route_labels,
                  "router levels in the SFT data: random (default) or true")
      ->check(CLI::IsMember({"random", "true"}));
  gen->add_option("--tool-results", a->config.sft.tool_results,
                  "between the result markers of SFT tool trajectories: reasoned (default) or "
                  "raw")
      ->check(CLI::IsMember({"reasoned", "raw"}));
  gen->add_option("--fresh-names", a->config.sft.fresh_names_percent,
                  "percent of train fact items whose SFT records use freshly generated names "
                  "(default 0)")
      ->check(CLI::Range(0, 100));
  gen->add_option("--fresh-name-copies", a->config.sft.fresh_names_copies,
                  "records of each renamed fact item, each with names of its own (default 1)")
      ->check(CLI::PositiveNumber);
  gen->add_option("--check", a->check,
                  "a reference manifest.json: exit 1 unless every file matches its sha256");
  gen->callback([=] {
    auto world = tinyworld::GenerateTinyWorld(a->config);
    if (!world.ok()) {
      std::cerr << "allot tinyworld generate: " << world.status().ToString() << "\n";
      *exit_code = kExitError;
      return;
    }
    auto manifest = tinyworld::WriteTinyWorld(*world, a->config, a->out);
    if (!manifest.ok()) {
      std::cerr << "allot tinyworld generate: " << manifest.status().ToString() << "\n";
      *exit_code = kExitError;
      return;
    }
    std::cout << "wrote " << world->train.size() << " train and " << world->test.size()
              << " test items, " << world->knowledge.towns.size() + world->knowledge.people.size()
              << " corpus pages and " << world->sft.size() << " SFT records to " << a->out << "\n";
    if (!a->check.empty()) {
      const std::string diff = CompareManifests(*manifest, a->check);
      if (!diff.empty()) {
        std::cerr << "allot tinyworld generate: the data differs from the reference:\n" << diff;
        *exit_code = kExitError;
        return;
      }
      std::cout << "every file matches " << a->check << "\n";
    }
    *exit_code = kExitOk;
  });
}

}  // namespace allot::apps
