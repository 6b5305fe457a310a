#include "rewards/answer_normalizer.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "rewards/text_util.h"

namespace allot::rewards {
namespace {

using text::CollapseSpaces;
using text::IsAlpha;
using text::IsDigit;
using text::IsSpace;
using text::Trim;

std::string ReplaceAll(std::string_view s, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  for (size_t hit = s.find(from); hit != std::string_view::npos; hit = s.find(from, pos)) {
    out.append(s.substr(pos, hit - pos));
    out.append(to);
    pos = hit + from.size();
  }
  out.append(s.substr(pos));
  return out;
}

// Replaces the command `\name` only where it is not followed by a letter (so that "\left"
// does not eat "\leftarrow").
std::string ReplaceCommand(std::string_view s, std::string_view name, std::string_view to) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  for (size_t hit = s.find(name); hit != std::string_view::npos; hit = s.find(name, pos)) {
    size_t end = hit + name.size();
    out.append(s.substr(pos, hit - pos));
    if (end < s.size() && IsAlpha(s[end])) {
      out.append(name);
    } else {
      out.append(to);
    }
    pos = end;
  }
  out.append(s.substr(pos));
  return out;
}

// For every '{' at index i, match[i] is the index of its closing '}' (or npos). One linear
// pass, so that scanning many unclosed groups stays linear. Escaped characters are skipped.
std::vector<size_t> BraceMatches(std::string_view s) {
  std::vector<size_t> match(s.size(), std::string_view::npos);
  std::vector<size_t> stack;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      ++i;
    } else if (s[i] == '{') {
      stack.push_back(i);
    } else if (s[i] == '}' && !stack.empty()) {
      match[stack.back()] = i;
      stack.pop_back();
    }
  }
  return match;
}

// "\text{ cm}" -> " cm ". One linear pass per command.
std::string UnwrapTextCommands(std::string s) {
  static constexpr std::string_view kCommands[] = {"\\text{",   "\\textbf{",      "\\textit{",
                                                   "\\textrm{", "\\mathrm{",      "\\mathbf{",
                                                   "\\mbox{",   "\\operatorname{"};
  for (std::string_view cmd : kCommands) {
    if (s.find(cmd) == std::string::npos) continue;
    const std::vector<size_t> match = BraceMatches(s);
    std::string out;
    size_t pos = 0;
    for (size_t hit = s.find(cmd); hit != std::string::npos; hit = s.find(cmd, pos)) {
      size_t open = hit + cmd.size() - 1;
      size_t close = match[open];
      out.append(s, pos, hit - pos);
      if (close == std::string::npos) {  // unbalanced: drop the command, keep the rest
        pos = open + 1;
        continue;
      }
      out += ' ';
      out.append(s, open + 1, close - open - 1);
      out += ' ';
      pos = close + 1;
    }
    out.append(s, pos, std::string::npos);
    s = std::move(out);
  }
  return s;
}

// "\frac12" -> "\frac{1}{2}", "\frac1{x}" -> "\frac{1}{x}", "\sqrt2" -> "\sqrt{2}".
std::string BraceShorthandArguments(std::string_view s) {
  if (s.find("\\frac") == std::string_view::npos && s.find("\\sqrt") == std::string_view::npos) {
    return std::string(s);
  }
  const std::vector<size_t> match = BraceMatches(s);
  size_t next_bracket = std::string_view::npos;
  bool no_bracket = false;
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    int args = 0;
    size_t len = 0;
    if (s.compare(i, 5, "\\frac") == 0 && (i + 5 == s.size() || !IsAlpha(s[i + 5]))) {
      args = 2;
      len = 5;
    } else if (s.compare(i, 5, "\\sqrt") == 0 && (i + 5 == s.size() || !IsAlpha(s[i + 5]))) {
      args = 1;
      len = 5;
    }
    if (args == 0) {
      out += s[i++];
      continue;
    }
    out.append(s.substr(i, len));
    i += len;
    for (int a = 0; a < args; ++a) {
      while (i < s.size() && s[i] == ' ') ++i;
      if (i >= s.size()) break;
      if (s[i] == '{' || s[i] == '[') {
        // A braced argument (or \sqrt's [n]) is already fine; copy it and what follows.
        if (s[i] == '[' && args == 1) {
          // Cached: positions only grow, so a search never rescans (linear on hostile input).
          if (next_bracket == std::string_view::npos || next_bracket < i) {
            next_bracket = no_bracket ? std::string_view::npos : s.find(']', i);
            no_bracket = next_bracket == std::string_view::npos;
          }
          size_t close = next_bracket;
          if (close == std::string_view::npos) break;
          out.append(s.substr(i, close - i + 1));
          i = close + 1;
          --a;  // the optional index does not count as the argument
          continue;
        }
        size_t close = match[i];
        if (close == std::string_view::npos) break;
        out.append(s.substr(i, close - i + 1));
        i = close + 1;
      } else if (IsDigit(s[i]) || IsAlpha(s[i])) {
        out += '{';
        out += s[i++];
        out += '}';
      } else {
        break;
      }
    }
  }
  return out;
}

// Mixed numbers: "2\frac{1}{2}" is 5/2 (as answers write it), not 2 * 1/2 (as LaTeX would).
// Only an integer that starts a term, followed by \frac of two integers.
std::string MixedNumbers(const std::string& s) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    bool term_start = i == 0 || std::string_view(" (,+-=").find(s[i - 1]) != std::string::npos;
    if (!term_start || !IsDigit(s[i])) {
      out += s[i++];
      continue;
    }
    size_t j = i;
    while (j < s.size() && IsDigit(s[j])) ++j;
    size_t f = j;
    if (f < s.size() && s[f] == ' ') ++f;
    auto braced_int = [&](size_t at, size_t* end) {
      if (at >= s.size() || s[at] != '{') return false;
      size_t k = at + 1;
      while (k < s.size() && IsDigit(s[k])) ++k;
      if (k == at + 1 || k >= s.size() || s[k] != '}') return false;
      *end = k + 1;
      return true;
    };
    size_t e1 = 0, e2 = 0;
    if (s.compare(f, 5, "\\frac") == 0 && braced_int(f + 5, &e1) && braced_int(e1, &e2)) {
      out += "(" + s.substr(i, j - i) + "+" + s.substr(f, e2 - f) + ")";
      i = e2;
      continue;
    }
    out.append(s, i, j - i);
    i = j;
  }
  return out;
}

bool IsUnitToken(std::string_view t) {
  static const std::set<std::string_view> kSingleLetterUnits = {"m", "g", "s", "h", "l", "L",
                                                                "K", "N", "J", "W", "V"};
  // A compound unit: "m/s", "km/h", "m/s^2".
  if (size_t slash = t.find('/'); slash != std::string_view::npos) {
    return slash > 0 && IsUnitToken(t.substr(0, slash)) && IsUnitToken(t.substr(slash + 1));
  }
  size_t letters = 0;
  while (letters < t.size() && IsAlpha(t[letters])) ++letters;
  if (letters == 0) return false;
  std::string_view rest = t.substr(letters);
  if (!rest.empty() && rest.back() == '.') rest.remove_suffix(1);
  if (!rest.empty() && rest != "^2" && rest != "^3") return false;
  std::string_view word = t.substr(0, letters);
  static const std::set<std::string_view> kNotUnits = {"sin", "cos", "tan",  "log",
                                                       "ln",  "exp", "sqrt", "pi"};
  if (kNotUnits.count(word)) return false;
  return letters >= 2 || kSingleLetterUnits.count(word) > 0;
}

// Drops trailing unit words after a number: "5 cm" -> "5", "12 square feet" -> "12".
std::string StripTrailingUnits(const std::string& s) {
  std::vector<std::string_view> tokens;
  std::string_view v = s;
  size_t i = 0;
  while (i < v.size()) {
    while (i < v.size() && v[i] == ' ') ++i;
    size_t j = i;
    while (j < v.size() && v[j] != ' ') ++j;
    if (j > i) tokens.push_back(v.substr(i, j - i));
    i = j;
  }
  size_t keep = tokens.size();
  for (;;) {
    if (keep > 1 && IsUnitToken(tokens[keep - 1])) {
      --keep;
    } else if (keep > 2 && (tokens[keep - 1] == "^2" || tokens[keep - 1] == "^3") &&
               IsUnitToken(tokens[keep - 2])) {
      keep -= 2;  // "5 \text{ cm}^2": the power belongs to the unit, never to the number
    } else {
      break;
    }
  }
  if (keep == tokens.size()) return s;
  // Only when what is left ends in a number or a closing group: "5 cm", "\frac{1}{2} inch".
  std::string_view last = tokens[keep - 1];
  char c = last.back();
  if (!IsDigit(c) && c != '}' && c != ')') return s;
  std::string out;
  for (size_t k = 0; k < keep; ++k) {
    if (k) out += ' ';
    out.append(tokens[k]);
  }
  return out;
}

// "-1,234,567.5" -> "-1234567.5" when the whole answer is such a number.
std::string StripThousands(const std::string& s) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
  size_t lead = 0;
  while (i + lead < s.size() && IsDigit(s[i + lead])) ++lead;
  if (lead < 1 || lead > 3) return s;
  size_t p = i + lead;
  int groups = 0;
  while (p < s.size() && s[p] == ',') {
    if (p + 3 >= s.size()) return s;
    if (!IsDigit(s[p + 1]) || !IsDigit(s[p + 2]) || !IsDigit(s[p + 3])) return s;
    p += 4;
    ++groups;
  }
  if (groups == 0) return s;
  if (p < s.size() && s[p] == '.') {
    ++p;
    while (p < s.size() && IsDigit(s[p])) ++p;
  }
  if (p != s.size()) return s;
  std::string out;
  for (char c : s) {
    if (c != ',') out += c;
  }
  return out;
}

}  // namespace

NormalizedAnswer NormalizeAnswer(std::string_view answer) {
  NormalizedAnswer out;
  std::string s(Trim(answer));
  // Unicode first, so that later rules see LaTeX.
  s = ReplaceAll(s, "\xE2\x88\x92", "-");         // U+2212 minus
  s = ReplaceAll(s, "\xC3\x97", "\\times ");      // ×
  s = ReplaceAll(s, "\xC2\xB7", "\\cdot ");       // ·
  s = ReplaceAll(s, "\xCF\x80", "\\pi ");         // π
  s = ReplaceAll(s, "\xE2\x88\x9A", "\\sqrt");    // √
  s = ReplaceAll(s, "\xC2\xB0", "");              // °
  s = ReplaceAll(s, "\xE2\x89\xA4", "\\le ");     // ≤
  s = ReplaceAll(s, "\xE2\x89\xA5", "\\ge ");     // ≥
  s = ReplaceAll(s, "\xC2\xB1", "\\pm ");         // ±
  s = ReplaceAll(s, "\xE2\x88\x9E", "\\infty ");  // ∞
  s = ReplaceAll(s, "\xE2\x88\xAA", "\\cup ");    // ∪
  s = ReplaceAll(s, "\\$", "");
  s = ReplaceAll(s, "$", "");
  s = ReplaceAll(s, "\\(", "");
  s = ReplaceAll(s, "\\)", "");
  s = ReplaceAll(s, "\\[", "");
  s = ReplaceAll(s, "\\]", "");
  s = ReplaceCommand(s, "\\displaystyle", "");
  s = ReplaceAll(s, "\\left.", "");
  s = ReplaceAll(s, "\\right.", "");
  s = ReplaceCommand(s, "\\left", "");
  s = ReplaceCommand(s, "\\right", "");
  s = ReplaceCommand(s, "\\dfrac", "\\frac");
  s = ReplaceCommand(s, "\\tfrac", "\\frac");
  s = ReplaceCommand(s, "\\cfrac", "\\frac");
  // One spelling for each relation: \le, \ge, <, > (inequalities compare as intervals).
  s = ReplaceCommand(s, "\\leqslant", "\\le");
  s = ReplaceCommand(s, "\\geqslant", "\\ge");
  s = ReplaceCommand(s, "\\leq", "\\le");
  s = ReplaceCommand(s, "\\geq", "\\ge");
  s = ReplaceCommand(s, "\\lt", "<");
  s = ReplaceCommand(s, "\\gt", ">");
  s = ReplaceAll(s, "<=", "\\le ");
  s = ReplaceAll(s, ">=", "\\ge ");
  s = ReplaceAll(s, "{,}", ",");
  {  // "11,\! 111": a comma glued to the next group by a negative space separates thousands.
    std::string t;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s.compare(i, 3, ",\\!") == 0) {
        t += ',';
        i += 3;
        while (i < s.size() && s[i] == ' ') ++i;
        --i;
        continue;
      }
      t += s[i];
    }
    s = std::move(t);
  }
  s = ReplaceAll(s, "\\!", "");
  s = ReplaceAll(s, "\\;", " ");
  s = ReplaceAll(s, "\\:", " ");
  s = ReplaceAll(s, "\\ ", " ");
  s = ReplaceCommand(s, "\\qquad", " ");
  s = ReplaceCommand(s, "\\quad", " ");
  s = ReplaceAll(s, "~", " ");
  {  // "\," is a thin space; between digits it is a thousands separator.
    std::string t;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s.compare(i, 2, "\\,") == 0) {
        bool digits = i > 0 && IsDigit(s[i - 1]) && i + 2 < s.size() && IsDigit(s[i + 2]);
        if (!digits) t += ' ';
        ++i;
        continue;
      }
      t += s[i];
    }
    s = std::move(t);
  }
  for (std::string_view deg : {"^{\\circ}", "^\\circ", "^{\\degree}", "\\degree", "\\circ"}) {
    s = ReplaceAll(s, deg, "");
  }
  if (s.find('%') != std::string::npos) {
    out.percent = true;
    s = ReplaceAll(s, "\\%", "");
    s = ReplaceAll(s, "%", "");
  }
  s = UnwrapTextCommands(std::move(s));
  s = BraceShorthandArguments(s);
  s = CollapseSpaces(s);
  s = MixedNumbers(s);
  // "^{2}" -> "^2" for a single character.
  {
    std::string t;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '^' && i + 3 < s.size() && s[i + 1] == '{' && s[i + 3] == '}' &&
          s[i + 2] != '\\') {
        t += '^';
        t += s[i + 2];
        i += 3;
        continue;
      }
      t += s[i];
    }
    s = std::move(t);
  }
  while (!s.empty() && (s.back() == '.' || s.back() == ' ')) s.pop_back();
  for (std::string_view word : {" percent", " per cent"}) {  // "50 \text{ percent}" is 50%
    if (s.size() > word.size() && s.compare(s.size() - word.size(), word.size(), word) == 0) {
      s.resize(s.size() - word.size());
      out.percent = true;
    }
  }
  s = StripTrailingUnits(s);
  for (std::string_view word : {"degrees", "degree"}) {
    if (s.size() > word.size() && s.compare(s.size() - word.size(), word.size(), word) == 0) {
      s.resize(s.size() - word.size());
      s = std::string(Trim(s));
    }
  }
  s = StripThousands(s);
  // "(B)" -> "B".
  if (s.size() == 3 && s[0] == '(' && s[2] == ')' && s[1] >= 'A' && s[1] <= 'Z') s = s.substr(1, 1);
  out.text = std::string(Trim(s));
  return out;
}

}  // namespace allot::rewards
