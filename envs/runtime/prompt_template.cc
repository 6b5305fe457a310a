#include "envs/runtime/prompt_template.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>
#include <vector>

namespace allot::envs::runtime {
namespace {

constexpr size_t kMaxTemplateBytes = 1 << 20;

}  // namespace

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
