// Prompt templates: text files under configs/prompts/ with {{name}} placeholders, rendered by
// core/text_template.h's RenderTemplate.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/text_template.h"

namespace allot::envs::runtime {

using ::allot::RenderTemplate;
using ::allot::TemplatePlaceholders;

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
