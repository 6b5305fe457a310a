#include "datasets/jsonl_loader.h"

#include <algorithm>
#include <fstream>
#include <set>

#include "core/random.h"
#include "datasets/sampler.h"

namespace allot::datasets {
namespace {

using nlohmann::json;

// Follows a dotted path ("question.stem"); null when any step is missing.
const json* Lookup(const json& root, const std::string& path) {
  const json* cur = &root;
  size_t start = 0;
  while (start <= path.size()) {
    size_t dot = path.find('.', start);
    if (dot == std::string::npos) dot = path.size();
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(path.substr(start, dot - start));
    if (it == cur->end()) return nullptr;
    cur = &*it;
    start = dot + 1;
  }
  return cur;
}

// The first candidate key present (and not null).
const json* First(const json& root, const std::vector<std::string>& keys, std::string* used) {
  for (const auto& k : keys) {
    const json* v = Lookup(root, k);
    if (v != nullptr && !v->is_null()) {
      if (used) *used = k;
      return v;
    }
  }
  return nullptr;
}

std::string KeyList(const std::vector<std::string>& keys) {
  std::string out;
  for (const auto& k : keys) out += (out.empty() ? "'" : ", '") + k + "'";
  return out;
}

// Scalars as text: strings as they are, integers without ".0", floats shortest-exact.
Result<std::string> ScalarText(const json& v, const std::string& where, const std::string& key) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number() || v.is_boolean()) return v.dump();
  return InvalidArgument(where + ": field '" + key + "' must be a string or number, got " +
                         v.type_name());
}

std::string Trim(std::string s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string Letter(size_t i) { return std::string(1, static_cast<char>('A' + i)); }

// Options in letter order from the shapes listed in FieldMapping::options.
Result<std::vector<std::string>> ParseOptions(const json& v, const std::string& where,
                                              const std::string& key) {
  std::vector<std::pair<std::string, std::string>> labelled;  // (label, text)
  std::vector<std::string> out;
  auto bad = [&](const std::string& what) {
    return InvalidArgument(where + ": field '" + key + "': " + what);
  };
  if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i) {
      const json& o = v[i];
      if (o.is_string()) {
        out.push_back(o.get<std::string>());
      } else if (o.is_object() && o.contains("label") && o.contains("text") &&
                 o["label"].is_string() && o["text"].is_string()) {
        labelled.emplace_back(o["label"].get<std::string>(), o["text"].get<std::string>());
      } else if (o.is_number()) {
        out.push_back(o.dump());
      } else {
        return bad("option " + std::to_string(i) + " is neither text nor {label, text}");
      }
    }
    if (!labelled.empty() && !out.empty()) return bad("mixes plain and labelled options");
  } else if (v.is_object() && v.contains("label") && v.contains("text")) {
    const json& labels = v["label"];
    const json& texts = v["text"];
    if (!labels.is_array() || !texts.is_array() || labels.size() != texts.size()) {
      return bad("'label' and 'text' must be lists of the same length");
    }
    for (size_t i = 0; i < labels.size(); ++i) {
      if (!labels[i].is_string() || !texts[i].is_string())
        return bad("labels and texts must be strings");
      labelled.emplace_back(labels[i].get<std::string>(), texts[i].get<std::string>());
    }
  } else if (v.is_object()) {
    for (const auto& [label, text] : v.items()) {
      if (!text.is_string()) return bad("option '" + label + "' is not a string");
      labelled.emplace_back(label, text.get<std::string>());
    }
  } else {
    return bad("expected a list or an object of options");
  }
  if (!labelled.empty()) {
    std::sort(labelled.begin(), labelled.end());
    for (size_t i = 0; i < labelled.size(); ++i) {
      if (labelled[i].first != Letter(i)) {
        return bad("option labels must be A, B, C, ... in order; found '" + labelled[i].first +
                   "'");
      }
      out.push_back(labelled[i].second);
    }
  }
  if (out.size() < 2 || out.size() > 26) return bad("needs 2 to 26 options");
  return out;
}

}  // namespace

std::string LastBoxed(std::string_view text) {
  size_t best = std::string_view::npos;
  for (std::string_view tag : {"\\boxed{", "\\fbox{"}) {
    const size_t p = text.rfind(tag);
    if (p != std::string_view::npos && (best == std::string_view::npos || p > best)) {
      best = p + tag.size();
    }
  }
  if (best == std::string_view::npos) return "";
  int depth = 1;
  for (size_t i = best; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size()) {
      ++i;  // escaped brace
      continue;
    }
    if (text[i] == '{') ++depth;
    if (text[i] == '}' && --depth == 0) return std::string(text.substr(best, i - best));
  }
  return "";
}

Result<Example> ParseExample(std::string_view line, const FieldMapping& m, const std::string& where,
                             uint64_t seed) {
  json j = json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgument(where + ": invalid JSON");
  if (!j.is_object()) return InvalidArgument(where + ": expected a JSON object");
  Example ex;
  ex.source = where;
  ex.answer_format = m.answer_format;
  std::string key;

  if (const json* v = First(j, m.id, &key)) {
    ALLOT_ASSIGN_OR_RETURN(ex.id, ScalarText(*v, where, key));
  } else {
    ex.id = where;
  }
  const json* q = First(j, m.question, &key);
  if (q == nullptr)
    return InvalidArgument(where + ": missing question (tried " + KeyList(m.question) + ")");
  if (!q->is_string()) return InvalidArgument(where + ": field '" + key + "' must be a string");
  ex.question = Trim(q->get<std::string>());
  if (ex.question.empty()) return InvalidArgument(where + ": field '" + key + "' is empty");

  if (const json* v = First(j, m.solution, &key)) {
    ALLOT_ASSIGN_OR_RETURN(ex.solution, ScalarText(*v, where, key));
  }
  if (!m.options.empty()) {
    const json* v = First(j, m.options, &key);
    if (v == nullptr)
      return InvalidArgument(where + ": missing options (tried " + KeyList(m.options) + ")");
    ALLOT_ASSIGN_OR_RETURN(ex.options, ParseOptions(*v, where, key));
  }

  // The raw answer.
  std::string answer_key;
  const json* a = First(j, m.answer, &answer_key);
  if (a != nullptr && m.answer_transform == "first_element" && a->is_array()) {
    if (a->size() != 1) {
      return InvalidArgument(where + ": field '" + answer_key + "' must hold exactly one answer");
    }
    a = &(*a)[0];
  }
  if (a == nullptr) {
    if (m.answer_from_solution_boxed && !ex.solution.empty()) {
      ex.answer = LastBoxed(ex.solution);
      if (ex.answer.empty()) {
        return InvalidArgument(where + ": no answer field and no \\boxed{} in the solution");
      }
    } else {
      return InvalidArgument(where + ": missing answer (tried " + KeyList(m.answer) + ")");
    }
  } else if (m.answer_transform == "bool_to_yesno") {
    if (a->is_boolean()) {
      ex.answer = a->get<bool>() ? "yes" : "no";
    } else if (a->is_string() &&
               (a->get<std::string>() == "yes" || a->get<std::string>() == "no")) {
      ex.answer = a->get<std::string>();
    } else {
      return InvalidArgument(where + ": field '" + answer_key + "' must be true or false");
    }
  } else if (m.answer_transform == "index_to_letter") {
    if (a->is_number_integer()) {
      const int64_t i = a->get<int64_t>();
      if (i < 0 || i >= static_cast<int64_t>(std::max<size_t>(ex.options.size(), 1))) {
        return InvalidArgument(where + ": field '" + answer_key + "' index " + std::to_string(i) +
                               " is out of range");
      }
      ex.answer = Letter(static_cast<size_t>(i));
    } else {
      ALLOT_ASSIGN_OR_RETURN(ex.answer, ScalarText(*a, where, answer_key));
    }
  } else if (m.answer_transform == "gsm8k") {
    if (!a->is_string())
      return InvalidArgument(where + ": field '" + answer_key + "' must be a string");
    const std::string text = a->get<std::string>();
    const size_t hash = text.rfind("####");
    if (hash == std::string::npos) {
      return InvalidArgument(where + ": field '" + answer_key + "' has no '#### <answer>'");
    }
    if (ex.solution.empty()) ex.solution = Trim(text.substr(0, hash));
    std::string ans = Trim(text.substr(hash + 4));
    ans.erase(std::remove(ans.begin(), ans.end(), ','), ans.end());
    ex.answer = ans;
  } else {
    ALLOT_ASSIGN_OR_RETURN(ex.answer, ScalarText(*a, where, answer_key));
  }
  ex.answer = Trim(ex.answer);

  // GPQA: correct text plus distractors, shuffled per example with a seeded RNG so that the
  // letter of the correct option is not always A.
  if (!m.distractors.empty()) {
    std::vector<std::string> opts = {ex.answer};
    for (const auto& k : m.distractors) {
      const json* d = Lookup(j, k);
      if (d == nullptr || d->is_null())
        return InvalidArgument(where + ": missing field '" + k + "'");
      ALLOT_ASSIGN_OR_RETURN(std::string text, ScalarText(*d, where, k));
      opts.push_back(Trim(text));
    }
    SplitMix64 rng(seed ^ ByteHash64(ex.id));
    std::vector<size_t> order(opts.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    rng.Shuffle(order);
    ex.options.clear();
    for (size_t i = 0; i < order.size(); ++i) {
      ex.options.push_back(opts[order[i]]);
      if (order[i] == 0) ex.answer = Letter(i);
    }
  }
  if (ex.answer.empty()) return InvalidArgument(where + ": the answer is empty");
  if (ex.answer_format == "choice") {
    if (ex.answer.size() != 1 || ex.answer[0] < 'A' ||
        static_cast<size_t>(ex.answer[0] - 'A') >= std::max<size_t>(ex.options.size(), 1) ||
        ex.options.empty()) {
      return InvalidArgument(where + ": answer '" + ex.answer + "' is not the letter of an option");
    }
  }

  if (const json* t = First(j, m.trajectories, &key)) {
    if (!t->is_array()) return InvalidArgument(where + ": field '" + key + "' must be a list");
    const json* verdicts = First(j, m.trajectory_verdicts, nullptr);
    if (verdicts != nullptr && (!verdicts->is_array() || verdicts->size() != t->size())) {
      return InvalidArgument(where + ": trajectory verdicts do not match the trajectories");
    }
    for (size_t i = 0; i < t->size(); ++i) {
      if (!(*t)[i].is_string()) continue;
      if (verdicts != nullptr && !((*verdicts)[i].is_boolean() && (*verdicts)[i].get<bool>())) {
        continue;
      }
      ex.trajectories.push_back((*t)[i].get<std::string>());
    }
  }
  for (const auto& k : m.extra) {
    if (const json* v = Lookup(j, k)) ex.extra[k] = *v;
  }
  return ex;
}

Result<Dataset> LoadJsonl(const DatasetConfig& config) {
  FieldMapping mapping;
  if (config.preset == "custom") {
    mapping = config.fields;
  } else {
    ALLOT_ASSIGN_OR_RETURN(mapping, PresetMapping(config.preset));
  }
  std::ifstream in(config.path);
  if (!in) return NotFound("cannot open dataset " + config.path);
  const std::set<std::string> subjects(config.subjects.begin(), config.subjects.end());
  Dataset ds;
  ds.path = config.path;
  std::string line;
  size_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = config.path + ":" + std::to_string(line_no);
    Result<Example> ex = ParseExample(line, mapping, where, static_cast<uint64_t>(config.seed));
    if (!ex.ok()) {
      if (!config.skip_bad_lines) return ex.status();
      ++ds.skipped;
      if (ds.skipped_messages.size() < 20) ds.skipped_messages.push_back(ex.status().message());
      continue;
    }
    if (!subjects.empty()) {
      const json& s = ex->extra.contains("subject") ? ex->extra["subject"] : json();
      if (!s.is_string() || !subjects.count(s.get<std::string>())) {
        ++ds.filtered;
        continue;
      }
    }
    ds.examples.push_back(std::move(ex).value());
    if (config.max_examples > 0 &&
        static_cast<int64_t>(ds.examples.size()) >= config.max_examples) {
      break;
    }
  }
  if (in.bad())
    return DataLoss("read error in " + config.path + " after line " + std::to_string(line_no));
  if (ds.examples.empty()) {
    return InvalidArgument(
        config.path + ": no usable examples" +
        (ds.skipped ? " (" + std::to_string(ds.skipped) + " bad lines skipped)" : ""));
  }
  return ds;
}

}  // namespace allot::datasets
