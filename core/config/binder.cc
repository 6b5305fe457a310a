#include "core/config/binder.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>

namespace allot::config {
namespace {

std::string JoinPath(const std::string& base, std::string_view key) {
  if (base.empty()) return std::string(key);
  return base + "." + std::string(key);
}

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string FormatDouble(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  std::string s(buf, r.ptr);
  // Keep floats recognisable as floats when read back by humans and YAML tools.
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

std::string RangeText(const FieldSpec& spec) {
  std::string lo = spec.min ? FormatDouble(*spec.min) : "-inf";
  std::string hi = spec.max ? FormatDouble(*spec.max) : "inf";
  return "[" + lo + ", " + hi + "]";
}

}  // namespace

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string ClosestMatch(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = std::string::npos;
  for (const auto& c : candidates) {
    size_t d = EditDistance(Lower(std::string(word)), Lower(c));
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  const size_t allowed = std::max<size_t>(2, word.size() / 3);
  return best_d <= allowed ? best : "";
}

LoadVisitor::LoadVisitor(const ConfigNode& root) {
  Frame f;
  f.node = root.is_map() ? &root : nullptr;
  frames_.push_back(std::move(f));
  if (!root.is_map() && !root.is_null()) {
    Error(root, "", "the config must be a mapping of sections");
  }
}

void LoadVisitor::Error(const ConfigNode& at, const std::string& path, const std::string& what) {
  std::string msg = at.origin().ToString() + ": ";
  if (!path.empty()) msg += path + ": ";
  errors_.push_back(msg + what);
}

bool IsSecretKey(std::string_view key) {
  const std::string k = Lower(std::string(key));
  for (const char* name : {"token", "api_key", "apikey", "password", "passwd", "secret"}) {
    if (k == name) return true;
  }
  const auto ends_with = [&k](std::string_view suffix) {
    return k.size() > suffix.size() &&
           k.compare(k.size() - suffix.size(), suffix.size(), suffix.data(), suffix.size()) == 0;
  };
  // Tokenizer vocabulary fields name a token, not a credential.
  if (k == "bad_token" || k == "good_token" || k == "bos_token" || k == "eos_token" ||
      k == "pad_token" || k == "unk_token") {
    return false;
  }
  return ends_with("_token") || ends_with("_api_key") || ends_with("_password") ||
         ends_with("_secret");
}

const ConfigNode* LoadVisitor::Lookup(std::string_view key, std::string* path,
                                      const FieldSpec& spec) {
  Frame& f = frames_.back();
  f.known.emplace_back(key);
  *path = JoinPath(f.path, key);
  if (f.node == nullptr) return nullptr;
  const ConfigNode* n = f.node->Find(std::string(key));
  if (n != nullptr && n->required_unset()) {
    if (Enforced(*path)) {
      Error(*n, *path,
            "required, not set: " + n->required_hint() + " (set " + n->required_var() +
                " or --set " + *path + "=...)");
    } else {
      secret_paths_[*path] = n->raw();  // printed back as the placeholder, the default stays
    }
    return nullptr;
  }
  if (n == nullptr || n->is_null()) return nullptr;
  const bool secret = spec.secret || IsSecretKey(key);
  if (n->secret()) {  // interpolated from ${ENV}
    // Print the ${VAR} placeholder back. Only for a secret field does a non-empty fallback
    // force "<redacted>": the fallback could be the secret itself. Other values ("router",
    // "http://127.0.0.1:8000") stay readable.
    bool fallback = false;
    for (size_t p = n->raw().find(":-"); p != std::string::npos; p = n->raw().find(":-", p + 2)) {
      if (p + 2 < n->raw().size() && n->raw()[p + 2] != '}') fallback = true;
    }
    secret_paths_[*path] = secret && fallback ? "<redacted>" : n->raw();
  }
  if (secret && n->is_scalar() && !n->scalar().empty()) secret_values_.push_back(n->scalar());
  return n;
}

bool LoadVisitor::Enforced(const std::string& path) const {
  if (!required_sections_) return true;
  const std::string section = path.substr(0, path.find_first_of(".["));
  return std::find(required_sections_->begin(), required_sections_->end(), section) !=
         required_sections_->end();
}

template <typename T>
bool LoadVisitor::ParseNumber(const ConfigNode& n, const std::string& path, const FieldSpec& spec,
                              T& out) {
  if (!n.is_scalar() || n.quoted()) {
    const char* what = std::is_integral_v<T> ? "an integer" : "a number";
    Error(n, path, std::string("expected ") + what + ", got " +
                       (n.is_scalar() ? "the string '" + n.scalar() + "'"
                                      : n.is_map() ? std::string("a mapping")
                                                   : std::string("a list")));
    return false;
  }
  const std::string& s = n.scalar();
  T value{};
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || ptr != s.data() + s.size()) {
    if constexpr (std::is_integral_v<T>) {
      Error(n, path, "expected an integer, got '" + s + "'");
    } else {
      Error(n, path, "expected a number, got '" + s + "'");
    }
    return false;
  }
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(value)) {
      Error(n, path, "NaN is not allowed");
      return false;
    }
  }
  const double d = static_cast<double>(value);
  if ((spec.min && d < *spec.min) || (spec.max && d > *spec.max)) {
    Error(n, path, s + " is out of range " + RangeText(spec));
    return false;
  }
  out = value;
  return true;
}

void LoadVisitor::Value(std::string_view key, bool& v, const FieldSpec& spec) {
  std::string path;
  const ConfigNode* n = Lookup(key, &path, spec);
  if (n == nullptr) return;
  const std::string s = n->is_scalar() ? Lower(n->scalar()) : "";
  if (n->is_scalar() && !n->quoted() && (s == "true" || s == "yes" || s == "on")) {
    v = true;
  } else if (n->is_scalar() && !n->quoted() && (s == "false" || s == "no" || s == "off")) {
    v = false;
  } else {
    Error(*n, path, "expected true or false, got '" + (n->is_scalar() ? n->scalar() : "?") + "'");
  }
}

void LoadVisitor::Value(std::string_view key, int64_t& v, const FieldSpec& spec) {
  std::string path;
  if (const ConfigNode* n = Lookup(key, &path, spec)) ParseNumber(*n, path, spec, v);
}

void LoadVisitor::Value(std::string_view key, double& v, const FieldSpec& spec) {
  std::string path;
  if (const ConfigNode* n = Lookup(key, &path, spec)) ParseNumber(*n, path, spec, v);
}

void LoadVisitor::Value(std::string_view key, std::string& v, const FieldSpec& spec) {
  std::string path;
  const ConfigNode* n = Lookup(key, &path, spec);
  if (n == nullptr) return;
  if (!n->is_scalar()) {
    Error(*n, path, std::string("expected a string, got ") + (n->is_map() ? "a mapping" : "a list"));
    return;
  }
  if (!spec.choices.empty() &&
      std::find(spec.choices.begin(), spec.choices.end(), n->scalar()) == spec.choices.end()) {
    std::string list;
    for (const auto& c : spec.choices) list += (list.empty() ? "" : ", ") + c;
    std::string msg = "'" + n->scalar() + "' is not one of: " + list;
    if (std::string near = ClosestMatch(n->scalar(), spec.choices); !near.empty()) {
      msg += " (did you mean '" + near + "'?)";
    }
    Error(*n, path, msg);
    return;
  }
  v = n->scalar();
}

void LoadVisitor::Value(std::string_view key, std::vector<std::string>& v, const FieldSpec& spec) {
  std::string path;
  const ConfigNode* n = Lookup(key, &path, spec);
  if (n == nullptr) return;
  if (!n->is_sequence()) {
    Error(*n, path, "expected a list of strings");
    return;
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < n->items().size(); ++i) {
    const ConfigNode& item = n->items()[i];
    if (!item.is_scalar()) {
      Error(item, path + "[" + std::to_string(i) + "]", "expected a string");
      return;
    }
    if (!spec.choices.empty() &&
        std::find(spec.choices.begin(), spec.choices.end(), item.scalar()) == spec.choices.end()) {
      std::string list;
      for (const auto& c : spec.choices) list += (list.empty() ? "" : ", ") + c;
      Error(item, path + "[" + std::to_string(i) + "]",
            "'" + item.scalar() + "' is not one of: " + list);
      return;
    }
    out.push_back(item.scalar());
  }
  v = std::move(out);
}

void LoadVisitor::Value(std::string_view key, std::vector<double>& v, const FieldSpec& spec) {
  std::string path;
  const ConfigNode* n = Lookup(key, &path, spec);
  if (n == nullptr) return;
  if (!n->is_sequence()) {
    Error(*n, path, "expected a list of numbers");
    return;
  }
  std::vector<double> out(n->items().size());
  for (size_t i = 0; i < out.size(); ++i) {
    if (!ParseNumber(n->items()[i], path + "[" + std::to_string(i) + "]", spec, out[i])) return;
  }
  v = std::move(out);
}

void LoadVisitor::Value(std::string_view key, std::vector<int64_t>& v, const FieldSpec& spec) {
  std::string path;
  const ConfigNode* n = Lookup(key, &path, spec);
  if (n == nullptr) return;
  if (!n->is_sequence()) {
    Error(*n, path, "expected a list of integers");
    return;
  }
  std::vector<int64_t> out(n->items().size());
  for (size_t i = 0; i < out.size(); ++i) {
    if (!ParseNumber(n->items()[i], path + "[" + std::to_string(i) + "]", spec, out[i])) return;
  }
  v = std::move(out);
}

bool LoadVisitor::BeginSection(std::string_view key, const FieldSpec& spec) {
  std::string path;
  const ConfigNode* n = Lookup(key, &path, spec);
  if (n == nullptr) return false;  // absent: every default stays
  if (!n->is_map()) {
    Error(*n, path, "expected a section (a mapping of keys)");
    return false;
  }
  frames_.push_back(Frame{n, path, {}});
  return true;
}

void LoadVisitor::EndSection() {
  CheckUnknown(frames_.back());
  frames_.pop_back();
}

size_t LoadVisitor::BeginList(std::string_view key, size_t current_size, const FieldSpec& spec) {
  std::string path;
  const ConfigNode* n = Lookup(key, &path, spec);
  if (n != nullptr && !n->is_sequence()) {
    Error(*n, path, "expected a list");
    n = nullptr;
  }
  lists_.push_back(n);
  list_paths_.push_back(path);
  return n == nullptr ? current_size : n->items().size();
}

void LoadVisitor::BeginItem(size_t index) {
  const ConfigNode* list = lists_.back();
  const std::string path = list_paths_.back() + "[" + std::to_string(index) + "]";
  const ConfigNode* item = list == nullptr ? nullptr : &list->items()[index];
  if (item != nullptr && !item->is_map()) {
    Error(*item, path, "expected a mapping");
    item = nullptr;
  }
  frames_.push_back(Frame{item, path, {}});
}

void LoadVisitor::EndItem() {
  CheckUnknown(frames_.back());
  frames_.pop_back();
}

void LoadVisitor::EndList() {
  lists_.pop_back();
  list_paths_.pop_back();
}

void LoadVisitor::CheckUnknown(const Frame& frame) {
  if (frame.node == nullptr) return;
  for (const auto& [k, v] : frame.node->entries()) {
    if (std::find(frame.known.begin(), frame.known.end(), k) != frame.known.end()) continue;
    std::string msg = "unknown key";
    if (std::string near = ClosestMatch(k, frame.known); !near.empty()) {
      msg += " (did you mean '" + JoinPath(frame.path, near) + "'?)";
    }
    // Point at the key itself; a null value's origin is its key's.
    Error(v, JoinPath(frame.path, k), msg);
  }
}

Status LoadVisitor::Finish() {
  while (frames_.size() > 1) frames_.pop_back();
  CheckUnknown(frames_.front());
  if (errors_.empty()) return Status::Ok();
  std::string all;
  for (const auto& e : errors_) all += (all.empty() ? "" : "\n") + e;
  return InvalidArgument(all);
}

// ---------------------------------------------------------------------------------------------

class EmitVisitor : public Visitor {
 public:
  explicit EmitVisitor(const EmitOptions& options) : options_(options) {
    out_ << YAML::BeginMap;
  }

  std::string Finish() {
    out_ << YAML::EndMap;
    return std::string(out_.c_str()) + "\n";
  }

  void Value(std::string_view key, bool& v, const FieldSpec& spec) override {
    Scalar(key, v ? "true" : "false", spec);
  }
  void Value(std::string_view key, int64_t& v, const FieldSpec& spec) override {
    Scalar(key, std::to_string(v), spec);
  }
  void Value(std::string_view key, double& v, const FieldSpec& spec) override {
    Scalar(key, FormatDouble(v), spec);
  }
  void Value(std::string_view key, std::string& v, const FieldSpec& spec) override {
    const std::string path = JoinPath(Path(), key);
    Key(key);
    if (auto it = options_.secret_paths.find(path); it != options_.secret_paths.end()) {
      out_ << it->second;
    } else if ((spec.secret || IsSecretKey(key)) && !v.empty()) {
      out_ << std::string("<redacted>");
    } else {
      out_ << v;
    }
    Doc(spec);
  }
  void Value(std::string_view key, std::vector<std::string>& v, const FieldSpec& spec) override {
    Key(key);
    out_ << YAML::Flow << v;
    Doc(spec);
  }
  void Value(std::string_view key, std::vector<double>& v, const FieldSpec& spec) override {
    Key(key);
    out_ << YAML::Flow << YAML::BeginSeq;
    for (double d : v) out_ << FormatDouble(d);
    out_ << YAML::EndSeq;
    Doc(spec);
  }
  void Value(std::string_view key, std::vector<int64_t>& v, const FieldSpec& spec) override {
    Key(key);
    out_ << YAML::Flow << v;
    Doc(spec);
  }
  bool BeginSection(std::string_view key, const FieldSpec& spec) override {
    Key(key);
    Doc(spec);
    out_ << YAML::BeginMap;
    paths_.push_back(JoinPath(Path(), key));
    return true;
  }
  void EndSection() override {
    out_ << YAML::EndMap;
    paths_.pop_back();
  }
  size_t BeginList(std::string_view key, size_t current_size, const FieldSpec& spec) override {
    Key(key);
    Doc(spec);
    out_ << YAML::BeginSeq;
    list_paths_.push_back(JoinPath(Path(), key));
    return current_size;
  }
  void BeginItem(size_t index) override {
    out_ << YAML::BeginMap;
    paths_.push_back(list_paths_.back() + "[" + std::to_string(index) + "]");
  }
  void EndItem() override {
    out_ << YAML::EndMap;
    paths_.pop_back();
  }
  void EndList() override {
    out_ << YAML::EndSeq;
    list_paths_.pop_back();
  }

 private:
  std::string Path() const { return paths_.empty() ? "" : paths_.back(); }
  void Key(std::string_view key) { out_ << YAML::Key << std::string(key) << YAML::Value; }
  void Scalar(std::string_view key, const std::string& text, const FieldSpec& spec) {
    auto it = options_.secret_paths.find(JoinPath(Path(), key));
    Key(key);
    out_ << (it != options_.secret_paths.end() ? it->second : text);
    Doc(spec);
  }
  void Doc(const FieldSpec& spec) {
    if (options_.with_docs && !spec.doc.empty()) out_ << YAML::Comment(spec.doc);
  }

  const EmitOptions& options_;
  YAML::Emitter out_;
  std::vector<std::string> paths_;
  std::vector<std::string> list_paths_;
};

std::string EmitYaml(const std::function<void(Visitor&)>& describe, const EmitOptions& options) {
  EmitVisitor v(options);
  describe(v);
  return v.Finish();
}

}  // namespace allot::config
