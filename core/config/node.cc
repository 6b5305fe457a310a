#include "core/config/node.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace allot::config {
namespace fs = std::filesystem;

std::string Origin::ToString() const {
  std::string s = file.empty() ? "<config>" : file;
  if (line > 0) s += ":" + std::to_string(line);
  if (line > 0 && column > 0) s += ":" + std::to_string(column);
  return s;
}

ConfigNode ConfigNode::Scalar(std::string value, Origin origin) {
  ConfigNode n;
  n.kind_ = Kind::kScalar;
  n.scalar_ = std::move(value);
  n.origin_ = std::move(origin);
  return n;
}

ConfigNode ConfigNode::Map(Origin origin) {
  ConfigNode n;
  n.kind_ = Kind::kMap;
  n.origin_ = std::move(origin);
  return n;
}

ConfigNode ConfigNode::Null(Origin origin) {
  ConfigNode n;
  n.origin_ = std::move(origin);
  return n;
}

ConfigNode ConfigNode::Sequence(Origin origin) {
  ConfigNode n;
  n.kind_ = Kind::kSequence;
  n.origin_ = std::move(origin);
  return n;
}

ConfigNode ConfigNode::RequiredUnset(std::string var, std::string hint, std::string raw,
                                     Origin origin) {
  ConfigNode n = Null(std::move(origin));
  n.required_var_ = std::move(var);
  n.required_hint_ = std::move(hint);
  n.raw_ = std::move(raw);
  return n;
}

const ConfigNode* ConfigNode::Find(const std::string& key) const {
  for (const auto& [k, v] : entries_)
    if (k == key) return &v;
  return nullptr;
}

ConfigNode* ConfigNode::Find(const std::string& key) {
  for (auto& [k, v] : entries_)
    if (k == key) return &v;
  return nullptr;
}

void ConfigNode::Set(const std::string& key, ConfigNode value) {
  if (ConfigNode* existing = Find(key)) {
    *existing = std::move(value);
    return;
  }
  entries_.emplace_back(key, std::move(value));
}

void ConfigNode::Erase(const std::string& key) {
  std::erase_if(entries_, [&](const auto& e) { return e.first == key; });
}

void ConfigNode::MergeFrom(const ConfigNode& overlay) {
  if (is_map() && overlay.is_map()) {
    for (const auto& [k, v] : overlay.entries_) {
      if (ConfigNode* mine = Find(k)) {
        mine->MergeFrom(v);
      } else {
        entries_.emplace_back(k, v);
      }
    }
    return;
  }
  *this = overlay;
}

EnvLookup ProcessEnv() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

namespace {

constexpr int kMaxDepth = 64;

Origin MarkOrigin(const YAML::Mark& mark, const std::string& file) {
  return Origin{file, mark.line + 1, mark.column + 1};
}

Result<ConfigNode> Convert(const YAML::Node& node, const std::string& file, int depth) {
  if (depth > kMaxDepth) {
    return InvalidArgument(MarkOrigin(node.Mark(), file).ToString() + ": nesting deeper than " +
                           std::to_string(kMaxDepth) + " levels");
  }
  const Origin origin = MarkOrigin(node.Mark(), file);
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      return ConfigNode::Null(origin);
    case YAML::NodeType::Scalar: {
      ConfigNode n = ConfigNode::Scalar(node.Scalar(), origin);
      // yaml-cpp tags a plain scalar "?" and a quoted one "!".
      n.set_quoted(node.Tag() == "!");
      return n;
    }
    case YAML::NodeType::Sequence: {
      ConfigNode n = ConfigNode::Sequence(origin);
      for (const auto& item : node) {
        ALLOT_ASSIGN_OR_RETURN(ConfigNode child, Convert(item, file, depth + 1));
        n.items().push_back(std::move(child));
      }
      return n;
    }
    case YAML::NodeType::Map: {
      ConfigNode n = ConfigNode::Map(origin);
      for (const auto& kv : node) {
        if (!kv.first.IsScalar()) {
          return InvalidArgument(MarkOrigin(kv.first.Mark(), file).ToString() +
                                 ": map keys must be plain strings");
        }
        const std::string key = kv.first.Scalar();
        if (n.Find(key) != nullptr) {
          return InvalidArgument(MarkOrigin(kv.first.Mark(), file).ToString() +
                                 ": duplicate key '" + key + "'");
        }
        ALLOT_ASSIGN_OR_RETURN(ConfigNode child, Convert(kv.second, file, depth + 1));
        if (child.is_null()) child.set_origin(MarkOrigin(kv.first.Mark(), file));
        n.entries().emplace_back(key, std::move(child));
      }
      return n;
    }
  }
  return Internal("unreachable yaml node type");
}

Result<ConfigNode> LoadRecursive(const fs::path& path, std::vector<fs::path>& stack,
                                 int depth) {
  std::error_code ec;
  fs::path canonical = fs::weakly_canonical(path, ec);
  if (ec) canonical = path;
  if (std::find(stack.begin(), stack.end(), canonical) != stack.end()) {
    std::string chain;
    for (const auto& p : stack) chain += p.string() + " -> ";
    return InvalidArgument("include cycle: " + chain + canonical.string());
  }
  if (depth > 16) return InvalidArgument(path.string() + ": includes nested deeper than 16");
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(path.string() + ": cannot open config file");
  std::stringstream buf;
  buf << in.rdbuf();
  ALLOT_ASSIGN_OR_RETURN(ConfigNode root, ParseYaml(buf.str(), path.string()));
  if (root.is_null()) root = ConfigNode::Map(Origin{path.string(), 1, 1});
  if (!root.is_map()) {
    return InvalidArgument(root.origin().ToString() + ": a config file must be a mapping");
  }

  const ConfigNode* include = root.Find("include");
  if (include == nullptr) return root;

  std::vector<const ConfigNode*> targets;
  if (include->is_scalar()) {
    targets.push_back(include);
  } else if (include->is_sequence()) {
    for (const auto& item : include->items()) {
      if (!item.is_scalar()) {
        return InvalidArgument(item.origin().ToString() + ": include: expected a file path");
      }
      targets.push_back(&item);
    }
  } else {
    return InvalidArgument(include->origin().ToString() +
                           ": include: expected a path or a list of paths");
  }

  stack.push_back(canonical);
  ConfigNode merged = ConfigNode::Map(root.origin());
  for (const ConfigNode* t : targets) {
    fs::path target = path.parent_path() / t->scalar();
    auto base = LoadRecursive(target, stack, depth + 1);
    if (!base.ok()) return base.status().Annotate(t->origin().ToString() + ": include");
    merged.MergeFrom(*base);
  }
  stack.pop_back();
  root.Erase("include");
  merged.MergeFrom(root);
  return merged;
}

}  // namespace

Result<ConfigNode> ParseYaml(const std::string& text, const std::string& file) {
  YAML::Node doc;
  try {
    doc = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return InvalidArgument(file + ":" + std::to_string(e.mark.line + 1) + ":" +
                           std::to_string(e.mark.column + 1) + ": YAML syntax error: " + e.msg);
  }
  return Convert(doc, file, 0);
}

Status InterpolateEnv(ConfigNode& node, const EnvLookup& env) {
  if (node.is_map()) {
    for (auto& [k, v] : node.entries()) ALLOT_RETURN_IF_ERROR(InterpolateEnv(v, env));
    return Status::Ok();
  }
  if (node.is_sequence()) {
    for (auto& v : node.items()) ALLOT_RETURN_IF_ERROR(InterpolateEnv(v, env));
    return Status::Ok();
  }
  if (!node.is_scalar()) return Status::Ok();
  const std::string& in = node.scalar();
  if (in.find('$') == std::string::npos) return Status::Ok();

  std::string out;
  bool substituted = false;
  for (size_t i = 0; i < in.size();) {
    if (in.compare(i, 3, "$${") == 0) {
      out += "${";
      i += 3;
      continue;
    }
    if (in.compare(i, 2, "${") == 0) {
      size_t close = in.find('}', i + 2);
      if (close == std::string::npos) {
        return InvalidArgument(node.origin().ToString() + ": unterminated '${' in '" + in + "'");
      }
      std::string expr = in.substr(i + 2, close - i - 2);
      std::string name = expr;
      std::optional<std::string> fallback;
      std::optional<std::string> required;  // ${NAME:?hint}, as in the shell
      if (size_t colon = expr.find(':'); colon != std::string::npos && colon + 1 < expr.size() &&
                                         (expr[colon + 1] == '-' || expr[colon + 1] == '?')) {
        name = expr.substr(0, colon);
        (expr[colon + 1] == '-' ? fallback : required) = expr.substr(colon + 2);
      }
      if (name.empty()) {
        return InvalidArgument(node.origin().ToString() + ": empty variable name in '${}'");
      }
      std::optional<std::string> value = env(name);
      if (required && (!value || value->empty())) {
        node = ConfigNode::RequiredUnset(name, *required, in, node.origin());
        return Status::Ok();
      }
      if (!value) value = fallback;
      if (!value) {
        return InvalidArgument(node.origin().ToString() + ": environment variable " + name +
                               " is not set (use ${" + name + ":-default} for a fallback)");
      }
      out += *value;
      substituted = true;
      i = close + 1;
      continue;
    }
    out += in[i++];
  }
  ConfigNode replaced = ConfigNode::Scalar(out, node.origin());
  replaced.set_quoted(node.quoted());
  replaced.set_secret(substituted);
  if (substituted) replaced.set_raw(in);
  node = std::move(replaced);
  return Status::Ok();
}

Result<ConfigNode> LoadFile(const std::string& path, const EnvLookup& env) {
  std::vector<fs::path> stack;
  ALLOT_ASSIGN_OR_RETURN(ConfigNode root, LoadRecursive(path, stack, 0));
  ALLOT_RETURN_IF_ERROR(InterpolateEnv(root, env));
  return root;
}

Status ApplyOverride(ConfigNode& root, const std::string& assignment) {
  const size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    return InvalidArgument("--set " + assignment + ": expected key.path=value");
  }
  const std::string path = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  const std::string where = "--set " + path;
  ALLOT_ASSIGN_OR_RETURN(ConfigNode value, ParseYaml(text, where));
  if (value.is_null()) value = ConfigNode::Scalar("", Origin{where, 0, 0});
  // ParseYaml stamps line 1 on everything; an override has no line.
  std::function<void(ConfigNode&)> restamp = [&](ConfigNode& n) {
    n.set_origin(Origin{where, 0, 0});
    for (auto& [k, v] : n.entries()) restamp(v);
    for (auto& v : n.items()) restamp(v);
  };
  restamp(value);

  if (!root.is_map()) root = ConfigNode::Map(Origin{where, 0, 0});
  // Each component is a key, optionally followed by list indexes: `endpoints[1]`.
  ConfigNode* cur = &root;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const bool last = dot == std::string::npos;
    const std::string component = path.substr(start, last ? std::string::npos : dot - start);
    const size_t bracket = component.find('[');
    const std::string key = component.substr(0, bracket);
    if (key.empty()) return InvalidArgument(where + ": empty component in key path");
    std::vector<size_t> indexes;
    for (size_t b = bracket; b != std::string::npos && b < component.size();) {
      const size_t close = component.find(']', b);
      const std::string digits =
          close == std::string::npos ? "" : component.substr(b + 1, close - b - 1);
      if (component[b] != '[' || digits.empty() ||
          digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 9) {
        return InvalidArgument(where + ": '" + component + "': expected key or key[N]");
      }
      indexes.push_back(std::stoul(digits));
      b = close + 1;
    }
    ConfigNode* next = cur->Find(key);
    if (indexes.empty() && last) {
      if (next != nullptr) {
        next->MergeFrom(value);
      } else {
        cur->Set(key, std::move(value));
      }
      return Status::Ok();
    }
    if (next == nullptr && indexes.empty()) {
      cur->Set(key, ConfigNode::Map(Origin{where, 0, 0}));
      next = cur->Find(key);
    }
    std::string at = key;
    for (size_t index : indexes) {
      if (next == nullptr || !next->is_sequence()) {
        return InvalidArgument(
            where + ": '" + at + "' is not a list" +
            (next == nullptr ? "" : " (it is set at " + next->origin().ToString() + ")"));
      }
      if (index >= next->items().size()) {
        return InvalidArgument(where + ": '" + at + "' has " +
                               std::to_string(next->items().size()) + " items (index " +
                               std::to_string(index) + ")");
      }
      next = &next->items()[index];
      at += "[" + std::to_string(index) + "]";
    }
    if (last) {
      next->MergeFrom(value);
      return Status::Ok();
    }
    if (!next->is_map()) {
      return InvalidArgument(where + ": '" + at + "' is not a section (it is set at " +
                             next->origin().ToString() + ")");
    }
    cur = next;
    start = dot + 1;
  }
}

}  // namespace allot::config
