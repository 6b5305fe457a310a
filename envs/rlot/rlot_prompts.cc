#include "envs/rlot/rlot_prompts.h"

#include <cctype>
#include <fstream>
#include <map>
#include <sstream>

#include "core/text_template.h"

namespace allot::envs::rlot {
namespace {

Status ReadTemplate(const std::string& dir, const std::string& name, std::string* out) {
  const std::string path = dir + "/" + name + ".txt";
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(path + ": prompt template not found (env.rlot.prompts_dir)");
  std::stringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  while (!out->empty() && (out->back() == '\n' || out->back() == '\r')) out->pop_back();
  if (out->empty()) return InvalidArgument(path + ": prompt template is empty");
  return Status::Ok();
}

// The values the env fills into every template (EpisodeRun::Call), and into this one (`extra`).
Status CheckPlaceholders(const std::string& dir, const std::string& name, const std::string& text,
                         const std::vector<std::string>& extra) {
  const std::string path = dir + "/" + name + ".txt";
  std::map<std::string, std::string> vars = {{"question", ""}, {"steps", ""}, {"last_step", ""}};
  for (const std::string& v : extra) vars[v] = "";
  ALLOT_RETURN_IF_ERROR(RenderTemplate(text, vars, path).status());
  if (text.find("{{question}}") == std::string::npos) {
    return InvalidArgument(path + ": the template never uses {{question}}");
  }
  return Status::Ok();
}

std::string Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

Result<RlotPrompts> RlotPrompts::Load(const std::string& dir) {
  RlotPrompts p;
  struct File {
    const char* name;
    std::string* text;
    std::vector<std::string> extra;  // the values only this template gets
  };
  const File files[] = {
      {"reason", &p.reason, {}},
      {"decompose_list", &p.decompose_list, {}},
      {"decompose_solve", &p.decompose_solve, {"subtasks", "subtask", "results"}},
      {"decompose_summarize", &p.decompose_summarize, {"results"}},
      {"debate_plans", &p.debate_plans, {"num_plans"}},
      {"debate_compare", &p.debate_compare, {"plans"}},
      {"debate_execute", &p.debate_execute, {"plan"}},
      {"refine", &p.refine, {}},
      {"terminate", &p.terminate, {"format_instruction"}},
      {"finish_check", &p.finish_check, {}},
      {"self_evaluate", &p.self_evaluate, {}},
  };
  for (const File& f : files) {
    ALLOT_RETURN_IF_ERROR(ReadTemplate(dir, f.name, f.text));
    ALLOT_RETURN_IF_ERROR(CheckPlaceholders(dir, f.name, *f.text, f.extra));
  }
  if (Status s = ReadTemplate(dir, "zero_shot_cot", &p.zero_shot_cot); s.ok()) {
    ALLOT_RETURN_IF_ERROR(
        CheckPlaceholders(dir, "zero_shot_cot", p.zero_shot_cot, {"format_instruction"}));
  } else if (s.code() != StatusCode::kNotFound) {
    return s;
  }
  return p;
}

std::vector<std::string> ParseNumberedItems(std::string_view text, std::string_view label,
                                            size_t max_items) {
  std::vector<std::string> items;
  const std::string marker = "### " + std::string(label);
  size_t at = text.find(marker);
  while (at != std::string_view::npos && items.size() < max_items) {
    size_t i = at + marker.size();
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) ||
                               text[i] == ' ' || text[i] == '[' || text[i] == ']')) {
      ++i;
    }
    const size_t next = text.find(marker, i);
    if (i < text.size() && text[i] == ':') {
      std::string body = Trim(text.substr(
          i + 1, next == std::string_view::npos ? std::string_view::npos : next - i - 1));
      if (!body.empty()) items.push_back(std::move(body));
    }
    at = next;
  }
  return items;
}

int ParseChosenPlan(std::string_view text, int num_plans) {
  const std::string lower = Lower(text);
  const std::string key = "most promising plan is plan";
  const size_t at = lower.find(key);
  if (at == std::string::npos) return 1;
  size_t i = at + key.size();
  while (i < lower.size() && (lower[i] == ' ' || lower[i] == '[')) ++i;
  int index = 0;
  size_t digits = 0;
  while (i < lower.size() && std::isdigit(static_cast<unsigned char>(lower[i])) && digits < 4) {
    index = index * 10 + (lower[i] - '0');
    ++i;
    ++digits;
  }
  return digits > 0 && index >= 1 && index <= num_plans ? index : 1;
}

bool ParseYes(std::string_view text) {
  const std::string lower = Lower(text);
  for (size_t i = 0; i < lower.size(); ++i) {
    if (i > 0 && std::isalpha(static_cast<unsigned char>(lower[i - 1]))) continue;
    auto word = [&](const char* w, size_t n) {
      return lower.compare(i, n, w) == 0 &&
             (i + n >= lower.size() || !std::isalpha(static_cast<unsigned char>(lower[i + n])));
    };
    if (word("yes", 3)) return true;
    if (word("no", 2)) return false;
  }
  return false;
}

}  // namespace allot::envs::rlot
