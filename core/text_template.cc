#include "core/text_template.h"

#include <algorithm>
#include <cctype>

namespace allot {
namespace {

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

}  // namespace allot
