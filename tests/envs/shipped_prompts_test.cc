// Every shipped prompt template (configs/prompts/**.txt) renders to the bytes recorded in
// tests/testdata/prompts/rendered.json for one sample input: each placeholder the template uses
// gets the value "<name>". The file was written by the renderers the envs use, so a change to
// the template syntax or its renderer that alters what a model reads fails here.
//
// Regenerate (only when a template's text is meant to change): ALLOT_WRITE_RENDERED_PROMPTS=1.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "core/text_template.h"
#include "envs/rlot/rlot_prompts.h"
#include "envs/runtime/prompt_template.h"

namespace allot::envs {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const fs::path kPrompts = fs::path(ALLOT_SOURCE_DIR) / "configs" / "prompts";
const fs::path kRendered = fs::path(ALLOT_TEST_DATA_DIR) / "prompts" / "rendered.json";

// RLoT's folders (configs/prompts/rlot, configs/prompts/tinyworld/rlot): read by
// RlotPrompts::Load, which drops a template's trailing newline.
bool IsRlot(const fs::path& file) { return file.parent_path().filename() == "rlot"; }

// The sample input: each placeholder the template uses gets the value "<name>".
Result<std::string> RenderSample(const std::string& text, const std::string& where) {
  std::map<std::string, std::string> vars;
  for (const std::string& name : TemplatePlaceholders(text)) vars[name] = "<" + name + ">";
  return RenderTemplate(text, vars, where);
}

Result<std::string> RenderRlot(const fs::path& file) {
  ALLOT_ASSIGN_OR_RETURN(rlot::RlotPrompts p, rlot::RlotPrompts::Load(file.parent_path()));
  const std::map<std::string, std::string*> by_name = {
      {"reason", &p.reason},
      {"decompose_list", &p.decompose_list},
      {"decompose_solve", &p.decompose_solve},
      {"decompose_summarize", &p.decompose_summarize},
      {"debate_plans", &p.debate_plans},
      {"debate_compare", &p.debate_compare},
      {"debate_execute", &p.debate_execute},
      {"refine", &p.refine},
      {"terminate", &p.terminate},
      {"finish_check", &p.finish_check},
      {"self_evaluate", &p.self_evaluate},
      {"zero_shot_cot", &p.zero_shot_cot}};
  auto it = by_name.find(file.stem().string());
  if (it == by_name.end()) return NotFound(file.string() + ": not an RLoT template");
  const std::string& text = *it->second;
  return RenderSample(text, file.string());
}

Result<std::string> Render(const fs::path& file) {
  if (IsRlot(file)) return RenderRlot(file);
  ALLOT_ASSIGN_OR_RETURN(std::string text, runtime::LoadTemplateFile(file.string()));
  return RenderSample(text, file.string());
}

json RenderAll() {
  json out = json::object();
  for (const auto& entry : fs::recursive_directory_iterator(kPrompts)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".txt") continue;
    Result<std::string> text = Render(entry.path());
    EXPECT_TRUE(text.ok()) << text.status().ToString();
    if (text.ok()) out[fs::relative(entry.path(), kPrompts).generic_string()] = *text;
  }
  return out;
}

TEST(ShippedPromptsTest, EveryTemplateRendersAsRecorded) {
  const json rendered = RenderAll();
  ASSERT_GE(rendered.size(), 40u) << "fewer templates than shipped under " << kPrompts;
  if (std::getenv("ALLOT_WRITE_RENDERED_PROMPTS") != nullptr) {
    fs::create_directories(kRendered.parent_path());
    std::ofstream(kRendered, std::ios::binary) << rendered.dump(2) << "\n";
  }
  std::ifstream in(kRendered, std::ios::binary);
  ASSERT_TRUE(in) << kRendered;
  std::stringstream ss;
  ss << in.rdbuf();
  const json recorded = json::parse(ss.str());
  for (const auto& [name, text] : recorded.items()) {
    ASSERT_TRUE(rendered.contains(name)) << name << " is recorded but no longer shipped";
    EXPECT_EQ(rendered[name].get<std::string>(), text.get<std::string>()) << name;
  }
  for (const auto& [name, text] : rendered.items()) {
    EXPECT_TRUE(recorded.contains(name)) << name << " is shipped but not recorded";
  }
}

}  // namespace
}  // namespace allot::envs
