// Text templates with {{name}} placeholders: the one template syntax and renderer of the
// project's prompts (configs/prompts/, the tiny world's SFT records). Double braces leave
// LaTeX such as \boxed{} and JSON in a prompt alone.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace allot {

// Replaces every {{name}} (name: [A-Za-z0-9_]+) with vars[name]. A placeholder without a value
// is an error naming `where` (the template) and the name: a template that silently kept
// "{{question}}" would train on garbage.
Result<std::string> RenderTemplate(std::string_view tmpl,
                                   const std::map<std::string, std::string>& vars,
                                   const std::string& where);

// The placeholders a template uses, in order of first use.
std::vector<std::string> TemplatePlaceholders(std::string_view tmpl);

}  // namespace allot
