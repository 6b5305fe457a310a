#include "apps/allot_config.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "core/config/binder.h"
#include "core/config/node.h"
#include "core/logging.h"

namespace allot::apps {
namespace fs = std::filesystem;

namespace {

// Registers the values of keys named like secrets (api_key, token, password, ...) as log
// secrets before the config is bound, so that not even a load error can show one. Values of
// fields marked secret follow from Load. Other values, interpolated or not ("router",
// "http://127.0.0.1:8000"), stay readable in logs.
void RegisterSecrets(const config::ConfigNode& n, bool secret_key) {
  if (n.is_scalar() && secret_key && !n.scalar().empty()) RegisterSecret(n.scalar());
  for (const auto& [k, v] : n.entries()) RegisterSecrets(v, config::IsSecretKey(k));
  for (const auto& v : n.items()) RegisterSecrets(v, secret_key);
}

// Keys that are gone, with what replaced them: an error naming the new key, where the schema
// alone would say only "unknown key".
struct RemovedKey {
  const char* section;
  const char* key;
  const char* instead;
};
constexpr RemovedKey kRemovedKeys[] = {
    {"grpo", "normalize_std",
     "grpo.advantage_estimator (normalize_std: true is advantage_estimator: grpo, false is "
     "dr_grpo)"},
    {"grpo", "ratio_level",
     "grpo.policy_loss (ratio_level: token is policy_loss: ppo_clip, sequence is gspo)"},
};

Status CheckRemovedKeys(const config::ConfigNode& root) {
  std::string errors;
  for (const RemovedKey& r : kRemovedKeys) {
    const config::ConfigNode* section = root.Find(r.section);
    const config::ConfigNode* n = section == nullptr ? nullptr : section->Find(r.key);
    if (n == nullptr) continue;
    errors += std::string(errors.empty() ? "" : "\n") + n->origin().ToString() + ": " + r.section +
              "." + r.key + " was replaced by " + r.instead;
  }
  return errors.empty() ? Status::Ok() : InvalidArgument(errors);
}

std::string ExecutableDir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.parent_path().string();
}

}  // namespace

Result<LoadedConfig> LoadConfig(const std::string& path, const std::vector<std::string>& overrides,
                                const std::vector<std::string>* required_sections) {
  ALLOT_ASSIGN_OR_RETURN(config::ConfigNode root, config::LoadFile(path));
  for (const auto& o : overrides) ALLOT_RETURN_IF_ERROR(config::ApplyOverride(root, o));
  RegisterSecrets(root, false);
  ALLOT_RETURN_IF_ERROR(CheckRemovedKeys(root));
  LoadedConfig loaded;
  loaded.source = path;
  loaded.overrides = overrides;
  ALLOT_ASSIGN_OR_RETURN(loaded.local, ExtractLocalParts(root));
  std::vector<std::string> secret_values;
  Status s =
      config::Load(root, loaded.config, &loaded.secret_paths, &secret_values, required_sections);
  for (const std::string& v : secret_values) RegisterSecret(v);
  ALLOT_RETURN_IF_ERROR(s);
  return loaded;
}

std::string ResolvedYaml(LoadedConfig& loaded, bool with_docs) {
  return config::ToYaml(loaded.config,
                        {.with_docs = with_docs, .secret_paths = loaded.secret_paths});
}

Result<std::string> RecipeYaml(LoadedConfig& loaded) {
  return WithLocalParts(ResolvedYaml(loaded), loaded.local);
}

Result<std::string> FindRecipe(const std::string& name_or_path) {
  std::error_code ec;
  if (fs::is_regular_file(name_or_path, ec)) return name_or_path;
  const std::string file = name_or_path + ".yaml";
  std::vector<fs::path> dirs;
  if (const char* env = std::getenv("ALLOT_CONFIGS_DIR")) dirs.emplace_back(env);
  dirs.emplace_back("configs");
  const std::string exe = ExecutableDir();
  if (!exe.empty()) {
    dirs.push_back(fs::path(exe) / "../share/allot/configs");
    dirs.push_back(fs::path(exe) / "../configs");
    dirs.push_back(fs::path(exe) / "../../configs");  // build/apps/allot in a source tree
  }
  std::string tried;
  for (const auto& d : dirs) {
    const fs::path p = d / file;
    if (fs::is_regular_file(p, ec)) return p.lexically_normal().string();
    tried += "\n  " + p.lexically_normal().string();
  }
  return NotFound("recipe '" + name_or_path + "' not found; looked in:" + tried);
}

}  // namespace allot::apps
