// Prompt templates: text files under configs/prompts/ with {{name}} placeholders (double
// braces, so that LaTeX such as \boxed{} in a prompt is left alone).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace allot::envs::runtime {

// Replaces every {{name}} with vars[name]. A placeholder without a value is an error naming it
// and `where` (a template that silently keeps "{{question}}" would train on garbage).
Result<std::string> RenderTemplate(std::string_view tmpl,
                                   const std::map<std::string, std::string>& vars,
                                   const std::string& where);

// The placeholders a template uses, in order of first use.
std::vector<std::string> TemplatePlaceholders(std::string_view tmpl);

// Reads a template file (at most 1 MiB).
Result<std::string> LoadTemplateFile(const std::string& path);

// One template of an env's prompt set: its file name under the prompts folder (without .txt),
// where its text lives, and the placeholders it may use.
struct PromptSlotRef {
  std::string name;
  std::string* text;
  std::vector<std::string> vars;
};

// Fills every empty slot from `dir`/<name>.txt, then checks each template: a placeholder
// outside the slot's vars is an error, and a slot whose first var is "question" must use it.
// Errors name `prefix`.<name> (e.g. "coger.prompts.router").
Status ResolvePromptSlots(const std::string& dir, std::string_view prefix,
                          const std::vector<PromptSlotRef>& slots);

}  // namespace allot::envs::runtime
