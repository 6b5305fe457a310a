// allot config validate|print|defaults
#include <CLI/CLI.hpp>

#include <iostream>

#include "apps/allot_config.h"
#include "apps/commands.h"
#include "apps/engines.h"

namespace allot::apps {
namespace {

struct ConfigArgs {
  std::string file;
  std::vector<std::string> overrides;
  bool with_docs = false;
  bool keys = false;
};

// The schema check, then the check `allot train` makes before a run starts: a section or knob
// the recipe's engine (trainer.algorithm) does not read is an error here too.
int Validate(const ConfigArgs& a) {
  auto loaded = LoadConfig(a.file, a.overrides);
  if (!loaded.ok()) {
    std::cerr << loaded.status().message() << "\n";
    return kExitError;
  }
  if (Status engine = CheckRecipe(*loaded, a.overrides, /*resume=*/false); !engine.ok()) {
    std::cerr << engine.message() << "\n";
    return kExitError;
  }
  std::cout << a.file << ": OK\n";
  if (a.keys) {
    // Each key written (the file, what it includes, the --set assignments) and what reads it.
    auto written = config::LoadFile(loaded->source);
    if (!written.ok()) {
      std::cerr << written.status().message() << "\n";
      return kExitError;
    }
    for (const auto& o : a.overrides) {
      if (Status s = config::ApplyOverride(*written, o); !s.ok()) {
        std::cerr << s.message() << "\n";
        return kExitError;
      }
    }
    for (const WrittenKey& k :
         WrittenKeys(*written, loaded->config, loaded->config.trainer.algorithm)) {
      std::cout << k.origin.ToString() << ": " << k.path << ": "
                << (k.reader.empty() ? "not read: " + k.unread : "read by " + k.reader) << "\n";
    }
  }
  return kExitOk;
}

int Print(const ConfigArgs& a) {
  auto loaded = LoadConfig(a.file, a.overrides);
  if (!loaded.ok()) {
    std::cerr << loaded.status().message() << "\n";
    return kExitError;
  }
  if (a.with_docs || loaded->local.empty()) {
    std::cout << ResolvedYaml(*loaded, a.with_docs);
    return kExitOk;
  }
  auto yaml = RecipeYaml(*loaded);  // with the local parts (no doc comments then)
  if (!yaml.ok()) {
    std::cerr << yaml.status().message() << "\n";
    return kExitError;
  }
  std::cout << *yaml;
  return kExitOk;
}

int Defaults(const std::string& recipe) {
  LoadedConfig loaded;
  if (recipe != "none") {
    auto path = FindRecipe(recipe);
    if (!path.ok()) {
      std::cerr << path.status().message() << "\n";
      return kExitError;
    }
    // Required keys print as their ${NAME:?hint} placeholders: what the user must give.
    const std::vector<std::string> none;
    auto l = LoadConfig(*path, {}, &none);
    if (!l.ok()) {
      std::cerr << l.status().message() << "\n";
      return kExitError;
    }
    loaded = std::move(*l);
    std::cout << "# recipe " << *path << " with every default filled in\n";
  } else {
    std::cout << "# allot's built-in defaults\n";
  }
  std::cout << ResolvedYaml(loaded, /*with_docs=*/true);
  return kExitOk;
}

}  // namespace

void AddConfigCommands(CLI::App& app, int* exit_code) {
  CLI::App* cfg = app.add_subcommand("config", "Check, print and explore YAML configs");
  cfg->require_subcommand(1);
  auto args = std::make_shared<ConfigArgs>();

  CLI::App* validate = cfg->add_subcommand(
      "validate",
      "Check a recipe as allot train does before it starts: the schema and required keys, then "
      "the engine's check (sections and keys it does not read); print every error");
  validate->add_option("file", args->file, "config YAML")->required()->check(CLI::ExistingFile);
  validate->add_option("--set", args->overrides, "dotted override, e.g. --set dqn.lr=0.005");
  validate->add_flag("--keys", args->keys,
                     "then list every key written (file:line) and what reads it");
  validate->callback([=] { *exit_code = Validate(*args); });

  CLI::App* print = cfg->add_subcommand(
      "print",
      "Print the resolved config, every default filled in (secrets redacted, values from the "
      "environment as their ${VAR})");
  print->add_option("file", args->file, "config YAML")->required()->check(CLI::ExistingFile);
  print->add_option("--set", args->overrides, "dotted override, e.g. --set dqn.lr=0.005");
  print->add_flag("--docs", args->with_docs, "annotate each field with its description");
  print->callback([=] { *exit_code = Print(*args); });

  auto recipe = std::make_shared<std::string>();
  CLI::App* defaults =
      cfg->add_subcommand("defaults",
                          "Print a recipe with every default filled in and its required keys "
                          "as ${VAR:?hint} placeholders, or allot's built-in defaults");
  defaults
      ->add_option("recipe", *recipe,
                   "recipe name in configs/ (e.g. rlot), a recipe file, or 'none' (the "
                   "built-in defaults)")
      ->required();
  defaults->callback([=] { *exit_code = Defaults(*recipe); });
}

}  // namespace allot::apps
