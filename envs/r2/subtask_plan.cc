#include "envs/r2/subtask_plan.h"

#include <cctype>
#include <optional>

namespace allot::envs::r2 {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool StartsWithNoCase(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && Lower(s.substr(0, prefix.size())) == prefix;
}

// A numbered line: optional "#"s, optional "Subtask"/"Step", a number, then ':' '.' or ')'.
// Returns the number and sets `rest` to what follows the separator.
std::optional<int64_t> NumberedLine(std::string_view line, std::string_view* rest) {
  std::string_view s = Trim(line);
  while (!s.empty() && (s.front() == '#' || s.front() == '*' || s.front() == '-')) {
    s.remove_prefix(1);
  }
  s = Trim(s);
  for (std::string_view word : {"subtask", "sub-task", "step"}) {
    if (StartsWithNoCase(s, word)) {
      s.remove_prefix(word.size());
      s = Trim(s);
      break;
    }
  }
  size_t digits = 0;
  while (digits < s.size() && digits < 4 && std::isdigit(static_cast<unsigned char>(s[digits]))) {
    ++digits;
  }
  if (digits == 0 || digits >= s.size()) return std::nullopt;
  const char sep = s[digits];
  if (sep != ':' && sep != '.' && sep != ')') return std::nullopt;
  *rest = Trim(s.substr(digits + 1));
  while (!rest->empty() && rest->front() == '*') *rest = Trim(rest->substr(1));
  return std::stoll(std::string(s.substr(0, digits)));
}

std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// The integer after `key` (case-insensitive), skipping ' ', ':', '='.
std::optional<int64_t> IntAfter(std::string_view lower, std::string_view key) {
  size_t at = lower.find(key);
  if (at == std::string_view::npos) return std::nullopt;
  size_t i = at + key.size();
  while (i < lower.size() && (lower[i] == ' ' || lower[i] == ':' || lower[i] == '=')) ++i;
  size_t j = i;
  while (j < lower.size() && j - i < 4 && std::isdigit(static_cast<unsigned char>(lower[j]))) ++j;
  if (j == i) return std::nullopt;
  return std::stoll(std::string(lower.substr(i, j - i)));
}

// The token after `key`, up to a comma, semicolon, whitespace or the end.
std::optional<std::string> WordAfter(std::string_view text, std::string_view lower,
                                     std::string_view key) {
  size_t at = lower.find(key);
  if (at == std::string_view::npos) return std::nullopt;
  size_t i = at + key.size();
  while (i < text.size() && (text[i] == ' ' || text[i] == ':' || text[i] == '=')) ++i;
  size_t j = i;
  while (j < text.size() && text[j] != ',' && text[j] != ';' &&
         !std::isspace(static_cast<unsigned char>(text[j]))) {
    ++j;
  }
  if (j == i) return std::nullopt;
  std::string word(text.substr(i, j - i));
  while (!word.empty() && (word.back() == '.' || word.back() == ')' || word.back() == '*')) {
    word.pop_back();
  }
  if (word.empty()) return std::nullopt;
  return word;
}

}  // namespace

Result<std::vector<std::string>> ParseSubtasks(std::string_view text, int64_t max_subtasks) {
  std::vector<std::string> out;
  for (std::string_view line : Lines(text)) {
    std::string_view rest;
    if (std::optional<int64_t> n = NumberedLine(line, &rest)) {
      if (*n != static_cast<int64_t>(out.size()) + 1) {
        return InvalidArgument("decomposition: subtask " + std::to_string(*n) + " where subtask " +
                               std::to_string(out.size() + 1) + " was expected");
      }
      if (rest.empty()) {
        return InvalidArgument("decomposition: subtask " + std::to_string(*n) + " is empty");
      }
      out.emplace_back(rest);
      continue;
    }
    std::string_view t = Trim(line);
    if (!out.empty() && !t.empty()) out.back() += " " + std::string(t);
  }
  if (out.empty()) return InvalidArgument("decomposition: no numbered subtask");
  if (static_cast<int64_t>(out.size()) > max_subtasks) {
    return InvalidArgument("decomposition: " + std::to_string(out.size()) +
                           " subtasks, more than max_subtasks " + std::to_string(max_subtasks));
  }
  return out;
}

Result<std::vector<Assignment>> ParseAllocation(std::string_view text, size_t k,
                                                const std::vector<std::string>& pool,
                                                int64_t min_difficulty, int64_t max_difficulty) {
  std::vector<Assignment> out;
  for (std::string_view line : Lines(text)) {
    std::string_view rest;
    std::optional<int64_t> n = NumberedLine(line, &rest);
    if (!n) continue;
    const std::string where = "allocation: subtask " + std::to_string(*n);
    if (*n != static_cast<int64_t>(out.size()) + 1) {
      return InvalidArgument(where + " where subtask " + std::to_string(out.size() + 1) +
                             " was expected");
    }
    if (out.size() == k) {
      return InvalidArgument(where + ": the decomposition has only " + std::to_string(k) +
                             " subtasks");
    }
    const std::string lower = Lower(rest);
    std::optional<int64_t> difficulty = IntAfter(lower, "difficulty");
    if (!difficulty) return InvalidArgument(where + ": no 'difficulty <n>'");
    if (*difficulty < min_difficulty || *difficulty > max_difficulty) {
      return InvalidArgument(where + ": difficulty " + std::to_string(*difficulty) + " outside " +
                             std::to_string(min_difficulty) + ".." +
                             std::to_string(max_difficulty));
    }
    std::optional<std::string> model = WordAfter(rest, lower, "model");
    if (!model) return InvalidArgument(where + ": no 'model <name>'");
    const std::string wanted = Lower(*model);
    const std::string* found = nullptr;
    for (const std::string& p : pool) {
      if (Lower(p) == wanted) found = &p;
    }
    if (found == nullptr) {
      return InvalidArgument(where + ": model '" + *model + "' is not in the pool");
    }
    out.push_back({*difficulty, *found});
  }
  if (out.size() != k) {
    return InvalidArgument("allocation: " + std::to_string(out.size()) + " of " +
                           std::to_string(k) + " subtasks assigned");
  }
  return out;
}

std::string FormatSubtasks(const std::vector<std::string>& subtasks) {
  std::string out;
  for (size_t i = 0; i < subtasks.size(); ++i) {
    out += "Subtask " + std::to_string(i + 1) + ": " + subtasks[i] + "\n";
  }
  return out;
}

std::string FormatAllocation(const std::vector<Assignment>& allocation) {
  std::string out;
  for (size_t i = 0; i < allocation.size(); ++i) {
    out += "Subtask " + std::to_string(i + 1) + ": difficulty " +
           std::to_string(allocation[i].difficulty) + ", model " + allocation[i].model + "\n";
  }
  return out;
}

}  // namespace allot::envs::r2
