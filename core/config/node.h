// ConfigNode: a YAML document as a tree that remembers where every value came from.
//
// yaml-cpp's marks carry a line but not a file, and allot's configs are assembled from several
// sources (a recipe, the files it includes, `--set` overrides, `${ENV}` values). Every node
// here records its origin so that an error can name the file and line of the offending value.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace allot::config {

struct Origin {
  std::string file;  // a path, or "--set" for command-line overrides
  int line = 0;      // 1-based; 0 when unknown
  int column = 0;    // 1-based

  std::string ToString() const;  // "configs/x.yaml:3:5"
};

class ConfigNode {
 public:
  enum class Kind { kNull, kScalar, kMap, kSequence };

  ConfigNode() = default;
  static ConfigNode Scalar(std::string value, Origin origin);
  static ConfigNode Map(Origin origin);
  static ConfigNode Sequence(Origin origin);
  static ConfigNode Null(Origin origin);

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::kNull; }
  bool is_scalar() const { return kind_ == Kind::kScalar; }
  bool is_map() const { return kind_ == Kind::kMap; }
  bool is_sequence() const { return kind_ == Kind::kSequence; }
  const Origin& origin() const { return origin_; }
  void set_origin(Origin origin) { origin_ = std::move(origin); }

  // Scalars.
  const std::string& scalar() const { return scalar_; }
  // True when the scalar was quoted in the source: "1" is then a string, never a number.
  bool quoted() const { return quoted_; }
  void set_quoted(bool q) { quoted_ = q; }
  // True when any part of the value came from `${ENV}`: the value is then redacted in the
  // resolved config and in logs.
  bool secret() const { return secret_; }
  void set_secret(bool s) { secret_ = s; }
  // For an interpolated scalar: the text before interpolation ("${OPENAI_API_KEY}").
  const std::string& raw() const { return raw_; }
  void set_raw(std::string raw) { raw_ = std::move(raw); }
  // A required key left unset: the value was `${NAME:?hint}` and NAME is unset or empty. The
  // node is null; binding it is an error naming the key, NAME and the hint (binder.cc) unless
  // `--set` replaced it first.
  bool required_unset() const { return !required_var_.empty(); }
  const std::string& required_var() const { return required_var_; }
  const std::string& required_hint() const { return required_hint_; }
  static ConfigNode RequiredUnset(std::string var, std::string hint, std::string raw,
                                  Origin origin);

  // Maps keep insertion order so the resolved config reads like the source.
  std::vector<std::pair<std::string, ConfigNode>>& entries() { return entries_; }
  const std::vector<std::pair<std::string, ConfigNode>>& entries() const { return entries_; }
  const ConfigNode* Find(const std::string& key) const;
  ConfigNode* Find(const std::string& key);
  // Replaces or appends.
  void Set(const std::string& key, ConfigNode value);
  void Erase(const std::string& key);

  // Sequences.
  std::vector<ConfigNode>& items() { return items_; }
  const std::vector<ConfigNode>& items() const { return items_; }

  // Deep merge: maps merge key by key, anything else in `overlay` replaces this node.
  void MergeFrom(const ConfigNode& overlay);

 private:
  Kind kind_ = Kind::kNull;
  Origin origin_;
  std::string scalar_;
  bool quoted_ = false;
  bool secret_ = false;
  std::string raw_;
  std::string required_var_;
  std::string required_hint_;
  std::vector<std::pair<std::string, ConfigNode>> entries_;
  std::vector<ConfigNode> items_;
};

// Environment lookup, injectable for tests.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
EnvLookup ProcessEnv();

// Parses YAML text. `file` is only used in error messages and origins.
Result<ConfigNode> ParseYaml(const std::string& text, const std::string& file);

// Loads a config file and resolves, in this order:
//  1. `include:` (a path or a list of paths, relative to the including file), merged first so
//     that the including file overrides what it includes; cycles are an error;
//  2. `${NAME}` and `${NAME:-default}` in scalars from the environment (`$${` is a literal `${`),
//     and `${NAME:?hint}`: a required key, which NAME or a later `--set` must give (unset, the
//     node is left ConfigNode::required_unset() for the binder to report).
Result<ConfigNode> LoadFile(const std::string& path, const EnvLookup& env = ProcessEnv());

// Applies one `a.b.c=value` override; the value is parsed as a YAML scalar or flow collection.
// A component may index an existing list: `endpoints[1].base_url=http://host:8001`.
Status ApplyOverride(ConfigNode& root, const std::string& assignment);

// Resolves `${...}` in every scalar under `node`. `${NAME:?hint}` with NAME unset or empty is
// no error here (a `--set` may still give the key): the scalar becomes a required_unset() node.
Status InterpolateEnv(ConfigNode& node, const EnvLookup& env);

}  // namespace allot::config
