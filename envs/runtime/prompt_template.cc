#include "envs/runtime/prompt_template.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>
#include <vector>

namespace allot::envs::runtime {
namespace {

constexpr size_t kMaxTemplateBytes = 1 << 20;

// Finds the next {{name}} from `from`; name is [A-Za-z0-9_]+. npos when none.
size_t NextPlaceholder(std::string_view t, size_t from, std::string_view* name, size_t* end) {
  for (size_t open = t.find("{{", from); open != std::string_view::npos;
       open = t.find("{{", open + 1)) {
    size_t i = open + 2;
    while (i < t.size() && (std::isalnum(static_cast<unsigned char>(t[i])) || t[i] == '_')) ++i;
    if (i > open + 2 && t.substr(i, 2) == "}}") {
      *name = t.substr(open + 2, i - open - 2);
      *end = i + 2;
      return open;
    }
  }
  return std::string_view::npos;
}

}  // namespace

Result<std::string> RenderTemplate(std::string_view tmpl,
                                   const std::map<std::string, std::string>& vars,
                                   const std::string& where) {
  std::string out;
  out.reserve(tmpl.size());
  size_t pos = 0;
  std::string_view name;
  size_t end = 0;
  for (size_t open = NextPlaceholder(tmpl, pos, &name, &end); open != std::string_view::npos;
       open = NextPlaceholder(tmpl, pos, &name, &end)) {
    auto it = vars.find(std::string(name));
    if (it == vars.end()) {
      return InvalidArgument(where + ": placeholder {{" + std::string(name) + "}} has no value");
    }
    out.append(tmpl.substr(pos, open - pos));
    out.append(it->second);
    pos = end;
  }
  out.append(tmpl.substr(pos));
  return out;
}

std::vector<std::string> TemplatePlaceholders(std::string_view tmpl) {
  std::vector<std::string> names;
  std::string_view name;
  size_t end = 0;
  for (size_t open = NextPlaceholder(tmpl, 0, &name, &end); open != std::string_view::npos;
       open = NextPlaceholder(tmpl, end, &name, &end)) {
    if (std::find(names.begin(), names.end(), name) == names.end()) names.emplace_back(name);
  }
  return names;
}

Result<std::string> LoadTemplateFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("prompt template '" + path + "': cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  if (text.size() > kMaxTemplateBytes) {
    return InvalidArgument("prompt template '" + path + "': larger than 1 MiB");
  }
  return text;
}

Status ResolvePromptSlots(const std::string& dir, std::string_view prefix,
                          const std::vector<PromptSlotRef>& slots) {
  for (const PromptSlotRef& slot : slots) {
    std::string& text = *slot.text;
    const std::string field = std::string(prefix) + "." + slot.name;
    if (text.empty()) {
      Result<std::string> loaded = LoadTemplateFile(dir + "/" + slot.name + ".txt");
      if (!loaded.ok()) return loaded.status().Annotate(field);
      text = std::move(loaded).value();
    }
    std::map<std::string, std::string> vars;
    for (const std::string& v : slot.vars) vars[v] = "x";
    Result<std::string> rendered = RenderTemplate(text, vars, field);
    if (!rendered.ok()) return rendered.status();
    if (!slot.vars.empty() && slot.vars[0] == "question" &&
        text.find("{{question}}") == std::string::npos) {
      return InvalidArgument(field + ": the template never uses {{question}}");
    }
  }
  return Status::Ok();
}

}  // namespace allot::envs::runtime
