// Binding ConfigNode trees to typed config structs, and printing them back as YAML.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/config/node.h"
#include "core/config/schema.h"
#include "core/status.h"

namespace allot::config {

// Loads fields from a tree into a struct. Every problem is collected (not just the first) and
// each names the file, line, column and dotted path, e.g.
//   configs/rlot.yaml:7:3: dqn.lrr: unknown key (did you mean 'lr'?)
class LoadVisitor : public Visitor {
 public:
  explicit LoadVisitor(const ConfigNode& root);

  void Value(std::string_view key, bool& v, const FieldSpec& spec) override;
  void Value(std::string_view key, int64_t& v, const FieldSpec& spec) override;
  void Value(std::string_view key, double& v, const FieldSpec& spec) override;
  void Value(std::string_view key, std::string& v, const FieldSpec& spec) override;
  void Value(std::string_view key, std::vector<std::string>& v, const FieldSpec& spec) override;
  void Value(std::string_view key, std::vector<double>& v, const FieldSpec& spec) override;
  void Value(std::string_view key, std::vector<int64_t>& v, const FieldSpec& spec) override;
  bool BeginSection(std::string_view key, const FieldSpec& spec) override;
  void EndSection() override;
  size_t BeginList(std::string_view key, size_t current_size, const FieldSpec& spec) override;
  void BeginItem(size_t index) override;
  void EndItem() override;
  void EndList() override;

  // Required keys (`${NAME:?hint}`, ConfigNode::required_unset()) left unset are errors only
  // under these top-level sections (a command that reads part of a recipe); elsewhere they keep
  // the field's default and print back as their placeholder. Default: every section.
  void RequireOnly(std::vector<std::string> sections) { required_sections_ = std::move(sections); }
  // Checks the root for unknown keys and returns all errors as one status.
  Status Finish();
  // Dotted paths whose values came from `${ENV}`, each with what to print instead of the value:
  // the `${VAR}` placeholder (so `resume` re-resolves it), or "<redacted>" for a secret whose
  // placeholder carries a non-empty fallback (the fallback could be the secret itself).
  const std::map<std::string, std::string>& secret_paths() const { return secret_paths_; }
  // Non-empty values of secret fields (FieldSpec::secret, or a key IsSecretKey names), literal
  // or interpolated: the values that logs must never show.
  const std::vector<std::string>& secret_values() const { return secret_values_; }

 private:
  struct Frame {
    const ConfigNode* node = nullptr;  // a map, or null when the section is absent
    std::string path;                  // "dqn" or "endpoints[2]"
    std::vector<std::string> known;    // keys the schema declared at this level
  };
  const ConfigNode* Lookup(std::string_view key, std::string* path, const FieldSpec& spec);
  void CheckUnknown(const Frame& frame);
  bool Enforced(const std::string& path) const;
  void Error(const ConfigNode& at, const std::string& path, const std::string& what);
  template <typename T>
  bool ParseNumber(const ConfigNode& n, const std::string& path, const FieldSpec& spec, T& out);

  std::vector<Frame> frames_;
  std::vector<const ConfigNode*> lists_;
  std::vector<std::string> list_paths_;
  std::vector<std::string> errors_;
  std::map<std::string, std::string> secret_paths_;
  std::vector<std::string> secret_values_;
  std::optional<std::vector<std::string>> required_sections_;
};

// True for keys that name a secret by convention: token, api_key, apikey, password, passwd,
// secret, and names ending in _token, _api_key, _password or _secret (auth_token,
// client_secret), except the tokenizer's own (bad_token, good_token, max_tokens, ...).
bool IsSecretKey(std::string_view key);

// Prints a struct as YAML: the resolved config, or the defaults. Secret fields and values
// from `${ENV}` are written as "<redacted>".
class EmitVisitor;
struct EmitOptions {
  bool with_docs = false;
  // Paths to redact, each with what to print instead ("${VAR}" keeps resume working).
  std::map<std::string, std::string> secret_paths;
};
std::string EmitYaml(const std::function<void(Visitor&)>& describe, const EmitOptions& options);

// `required_sections`: see LoadVisitor::RequireOnly (nullptr: every section).
template <typename T>
Status Load(const ConfigNode& root, T& out,
            std::map<std::string, std::string>* secret_paths = nullptr,
            std::vector<std::string>* secret_values = nullptr,
            const std::vector<std::string>* required_sections = nullptr) {
  LoadVisitor v(root);
  if (required_sections != nullptr) v.RequireOnly(*required_sections);
  out.Describe(v);
  Status s = v.Finish();
  if (secret_paths != nullptr) *secret_paths = v.secret_paths();
  if (secret_values != nullptr) *secret_values = v.secret_values();
  return s;
}

template <typename T>
std::string ToYaml(T& cfg, const EmitOptions& options = {}) {
  return EmitYaml([&](Visitor& v) { cfg.Describe(v); }, options);
}

// Levenshtein distance, for "did you mean".
size_t EditDistance(std::string_view a, std::string_view b);
// The closest candidate within a small distance, or "" when none is close.
std::string ClosestMatch(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace allot::config
