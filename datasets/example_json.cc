#include "datasets/example_json.h"

#include <nlohmann/json.hpp>

namespace allot::datasets {
namespace {

using nlohmann::json;

constexpr const char* kQuestionKeys[] = {"question", "problem", "prompt"};
constexpr const char* kAnswerKeys[] = {"answer", "reference", "solution"};
constexpr const char* kFormatKeys[] = {"answer_format", "format"};
constexpr const char* kKnownKeys[] = {"question",  "problem",  "prompt",  "answer",
                                      "reference", "solution", "options", "answer_format",
                                      "format",    "id",       "source",  "extra"};

template <size_t N>
std::string Tried(const char* const (&keys)[N]) {
  std::string out;
  for (const char* k : keys) out += (out.empty() ? "'" : ", '") + std::string(k) + "'";
  return out;
}

// The first of `keys` present and not null, or null; `used` names it.
template <size_t N>
const json* First(const json& j, const char* const (&keys)[N], std::string* used) {
  for (const char* k : keys) {
    if (auto it = j.find(k); it != j.end() && !it->is_null()) {
      *used = k;
      return &*it;
    }
  }
  return nullptr;
}

bool IsFormatName(const std::string& f) {
  return f == "boxed" || f == "choice" || f == "number" || f == "yesno" || f == "text";
}

}  // namespace

Result<Example> ExampleFromJson(std::string_view text, const std::string& where) {
  const json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return InvalidArgument(where + ": not a JSON object");
  }
  Example ex;
  ex.source = where;
  if (auto it = j.find("source"); it != j.end() && it->is_string() && !it->empty()) {
    ex.source = it->get<std::string>();
  }
  auto bad = [&](const std::string& field, const std::string& what) {
    return InvalidArgument(ex.source + ": field '" + field + "': " + what);
  };
  std::string key;
  if (const json* v = First(j, kQuestionKeys, &key)) {
    if (!v->is_string() && !v->is_number()) {
      return bad(key, std::string("not a string or number but ") + v->type_name());
    }
    ex.question = v->is_string() ? v->get<std::string>() : v->dump();
  }
  if (ex.question.empty()) {
    return bad("question", "missing or empty (tried " + Tried(kQuestionKeys) + ")");
  }
  if (const json* v = First(j, kAnswerKeys, &key)) {
    if (v->is_string()) {
      ex.answer = v->get<std::string>();
    } else if (v->is_number()) {
      ex.answer = v->dump();
    } else {
      return bad(key, std::string("not a string or number but ") + v->type_name());
    }
  }
  if (ex.answer.empty()) {
    return bad("answer", "missing or empty (tried " + Tried(kAnswerKeys) + ")");
  }
  if (auto it = j.find("solution"); it != j.end() && it->is_string()) {
    ex.solution = it->get<std::string>();
  }
  if (auto it = j.find("options"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) return bad("options", "not a list");
    for (size_t i = 0; i < it->size(); ++i) {
      if (!(*it)[i].is_string())
        return bad("options", "option " + std::to_string(i) + " is not a string");
      ex.options.push_back((*it)[i].get<std::string>());
    }
  }
  std::string format_key;
  for (const char* k : kFormatKeys) {
    auto it = j.find(k);
    if (it == j.end() || it->is_null()) continue;
    if (!it->is_string() || !IsFormatName(it->get<std::string>())) {
      return bad(k, "expected one of boxed, choice, number, yesno, text");
    }
    if (!format_key.empty() && it->get<std::string>() != ex.answer_format) {
      return bad(k, "'" + it->get<std::string>() + "' disagrees with " + format_key + " '" +
                        ex.answer_format + "'");
    }
    if (format_key.empty()) {
      format_key = k;
      ex.answer_format = it->get<std::string>();
    }
  }
  ex.id = ex.source;
  if (auto it = j.find("id"); it != j.end() && !it->is_null()) {
    if (!it->is_string() && !it->is_number()) return bad("id", "not a string or number");
    ex.id = it->is_string() ? it->get<std::string>() : it->dump();
  }
  if (auto it = j.find("extra"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) return bad("extra", "not an object");
    ex.extra = *it;
  }
  for (const auto& [k, v] : j.items()) {
    bool known = false;
    for (const char* n : kKnownKeys) known = known || k == n;
    if (!known && !v.is_null()) ex.extra[k] = v;
  }
  return ex;
}

std::string GradingFormat(const Example& example, const std::string& env_default) {
  return example.answer_format.empty() || example.answer_format == "text" ? env_default
                                                                          : example.answer_format;
}

}  // namespace allot::datasets
