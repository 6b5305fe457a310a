#include "rewards/answer_equivalence.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <vector>

namespace allot::rewards {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }
bool IsAlpha(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

// Linear-time replace of every occurrence of `from`.
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
  while (keep > 1 && IsUnitToken(tokens[keep - 1])) --keep;
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

std::string CollapseSpaces(std::string_view s) {
  std::string out;
  bool space = false;
  for (char c : s) {
    if (IsSpace(c)) {
      space = true;
      continue;
    }
    if (space && !out.empty()) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

std::string Compact(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (!IsSpace(c)) out += c;
  }
  return out;
}

// Splits at top-level occurrences of `sep` (outside () [] {}).
std::vector<std::string> SplitTopLevel(std::string_view s, std::string_view sep) {
  std::vector<std::string> parts;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '\\' && i + 1 < s.size() && (s[i + 1] == '{' || s[i + 1] == '}')) {
      depth += s[i + 1] == '{' ? 1 : -1;
      ++i;
      continue;
    }
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') --depth;
    if (depth == 0 && s.compare(i, sep.size(), sep) == 0) {
      parts.emplace_back(Trim(s.substr(start, i - start)));
      start = i + sep.size();
      i = start - 1;
    }
  }
  parts.emplace_back(Trim(s.substr(start)));
  return parts;
}

// Whether the bracket at 0 closes exactly at the end of `s`.
bool OuterBracketsEnclose(std::string_view s) {
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') {
      if (--depth == 0 && i + 1 != s.size()) return false;
    }
  }
  return depth == 0;
}

struct Structure {
  enum Kind { kScalar, kTuple, kSet, kList, kUnion } kind = kScalar;
  char open = 0, close = 0;  // for tuples and intervals
  std::vector<std::string> elements;
};

Structure Classify(std::string_view s) {
  Structure st;
  if (std::vector<std::string> u = SplitTopLevel(s, "\\cup"); u.size() > 1) {
    st.kind = Structure::kUnion;
    st.elements = std::move(u);
    return st;
  }
  if (s.size() >= 4 && s.substr(0, 2) == "\\{" && s.substr(s.size() - 2) == "\\}") {
    st.kind = Structure::kSet;
    st.elements = SplitTopLevel(s.substr(2, s.size() - 4), ",");
    return st;
  }
  if (s.size() >= 2 && (s.front() == '(' || s.front() == '[') &&
      (s.back() == ')' || s.back() == ']') && OuterBracketsEnclose(s)) {
    std::vector<std::string> e = SplitTopLevel(s.substr(1, s.size() - 2), ",");
    if (e.size() > 1) {
      st.kind = Structure::kTuple;
      st.open = s.front();
      st.close = s.back();
      st.elements = std::move(e);
      return st;
    }
  }
  if (std::vector<std::string> e = SplitTopLevel(s, ","); e.size() > 1) {
    st.kind = Structure::kList;
    st.elements = std::move(e);
  }
  return st;
}

bool IsVariableName(std::string_view s) {
  s = Trim(s);
  if (s.empty() || s.size() > 12) return false;
  if (s.front() == '\\') {
    for (size_t i = 1; i < s.size(); ++i) {
      if (!IsAlpha(s[i])) return false;
    }
    return s.size() > 1;
  }
  size_t letters = 0;
  while (letters < s.size() && IsAlpha(s[letters])) ++letters;
  if (letters == 0 || letters > 2) return false;
  std::string_view rest = s.substr(letters);
  return rest.empty() || (rest.front() == '_' && rest.size() > 1);
}

// Words rather than maths: only letters, spaces, hyphens and apostrophes, with at least one
// word of three or more letters ("Paris", "blue whale"; not "xy", which is x*y).
bool IsPlainWords(std::string_view s) {
  size_t run = 0, longest = 0;
  for (char c : s) {
    if (IsAlpha(c)) {
      longest = std::max(longest, ++run);
    } else if (c == ' ' || c == '-' || c == '\'') {
      run = 0;
    } else {
      return false;
    }
  }
  return longest >= 3;
}

bool IsLetters(std::string_view s) {
  size_t letters = 0;
  for (char c : s) {
    if (IsAlpha(c)) {
      ++letters;
    } else if (c != ' ') {
      return false;
    }
  }
  return letters >= 2;
}

std::string Lowercase(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

class Checker {
 public:
  explicit Checker(const EquivalenceOptions& options) : options_(options) {}

  EquivalenceResult Check(std::string_view pred, std::string_view gold, int depth) {
    pred = Trim(pred);
    gold = Trim(gold);
    if (pred.empty() || gold.empty()) return {false, "empty"};
    if (pred.size() > options_.max_input_chars || gold.size() > options_.max_input_chars) {
      return {false, "too_long"};
    }
    if (pred == gold) return {true, "exact"};
    NormalizedAnswer np = NormalizeAnswer(pred), ng = NormalizeAnswer(gold);
    if (np.text.empty() || ng.text.empty()) return {false, "empty"};
    if (Compact(np.text) == Compact(ng.text) && np.percent == ng.percent) {
      return {true, "normalized"};
    }
    // "x \in [1, 3)" is the interval.
    for (NormalizedAnswer* n : {&np, &ng}) {
      size_t in = n->text.find("\\in ");
      if (in != std::string::npos && IsVariableName(n->text.substr(0, in))) {
        n->text = std::string(Trim(std::string_view(n->text).substr(in + 4)));
      }
    }
    if (depth < 3) {
      Structure sp = Classify(np.text), sg = Classify(ng.text);
      if (sp.kind != Structure::kScalar || sg.kind != Structure::kScalar) {
        return CompareStructures(sp, sg, depth);
      }
    }
    // Equations.
    std::vector<std::string> ep = SplitTopLevel(np.text, "="), eg = SplitTopLevel(ng.text, "=");
    if (ep.size() > 2 || eg.size() > 2) return {false, "unsupported_equation"};
    if (ep.size() == 2 && eg.size() == 2) {
      if (Compact(ep[0]) == Compact(eg[0])) return Scalar(ep[1], np.percent, eg[1], ng.percent);
      std::string dp = "(" + ep[0] + ")-(" + ep[1] + ")", dg = "(" + eg[0] + ")-(" + eg[1] + ")";
      EquivalenceResult r = Scalar(dp, false, dg, false);
      if (r.equivalent) return {true, "equation"};
      r = Scalar(dp, false, "-(" + dg + ")", false);
      if (r.equivalent) return {true, "equation"};
      return {false, r.reason};
    }
    std::string sp = np.text, sg = ng.text;
    if (ep.size() == 2) {
      if (!IsVariableName(ep[0])) return {false, "equation_vs_value"};
      sp = ep[1];
    }
    if (eg.size() == 2) {
      if (!IsVariableName(eg[0])) return {false, "equation_vs_value"};
      sg = eg[1];
    }
    return Scalar(sp, np.percent, sg, ng.percent);
  }

 private:
  EquivalenceResult Scalar(const std::string& p, bool p_percent, const std::string& g,
                           bool g_percent) {
    if (Compact(p) == Compact(g) && p_percent == g_percent) return {true, "normalized"};
    if (IsLetters(p) && IsLetters(g) &&
        Lowercase(CollapseSpaces(p)) == Lowercase(CollapseSpaces(g))) {
      return {true, "text"};  // "No" vs "no"
    }
    if (IsPlainWords(p) && IsPlainWords(g)) {
      if (Lowercase(CollapseSpaces(p)) == Lowercase(CollapseSpaces(g))) return {true, "text"};
      return {false, "text"};
    }
    // A budget on GiNaC comparisons bounds the time of big unordered collections.
    if (++math_calls_ > options_.max_math_comparisons) return {false, "budget"};
    Result<bool> eq = MathEqual(p, g, options_.math);
    if (!eq.ok()) return {false, "unparsed: " + eq.status().message()};
    if (*eq) return {true, "math"};
    if (p_percent != g_percent) {
      // "10%" vs "0.1": the percentage over 100.
      std::string pp = p_percent ? "(" + p + ")/100" : p;
      std::string gg = g_percent ? "(" + g + ")/100" : g;
      Result<bool> pct = MathEqual(pp, gg, options_.math);
      if (pct.ok() && *pct) return {true, "percent"};
    }
    return {false, "math"};
  }

  EquivalenceResult CompareStructures(const Structure& p, const Structure& g, int depth) {
    auto kinds_match = [&]() {
      if (p.kind == g.kind) return true;
      // A bare list and a set are both unordered collections.
      auto unordered = [](Structure::Kind k) {
        return k == Structure::kList || k == Structure::kSet;
      };
      return unordered(p.kind) && unordered(g.kind);
    };
    if (!kinds_match()) return {false, "structure"};
    if (p.elements.size() != g.elements.size()) return {false, "structure_size"};
    if (static_cast<int>(p.elements.size()) > options_.max_elements) return {false, "too_many"};
    if (p.kind == Structure::kTuple) {
      if (p.open != g.open || p.close != g.close) return {false, "brackets"};
      for (size_t i = 0; i < p.elements.size(); ++i) {
        if (!Check(p.elements[i], g.elements[i], depth + 1).equivalent) {
          return {false, "element " + std::to_string(i)};
        }
      }
      return {true, p.open == '(' && p.close == ')' ? "tuple" : "interval"};
    }
    // Unordered: greedy matching is exact here because equivalence is transitive enough for
    // answers; each gold element is used once.
    std::vector<bool> used(g.elements.size(), false);
    for (const std::string& e : p.elements) {
      bool matched = false;
      for (size_t j = 0; j < g.elements.size() && !matched; ++j) {
        if (!used[j] && Check(e, g.elements[j], depth + 1).equivalent) {
          used[j] = true;
          matched = true;
        }
      }
      if (!matched) return {false, "unmatched element"};
    }
    return {true, p.kind == Structure::kUnion ? "union" : "set"};
  }

  const EquivalenceOptions& options_;
  int math_calls_ = 0;
};

}  // namespace

NormalizedAnswer NormalizeAnswer(std::string_view answer) {
  NormalizedAnswer out;
  std::string s(Trim(answer));
  // Unicode first, so that later rules see LaTeX.
  s = ReplaceAll(s, "\xE2\x88\x92", "-");       // U+2212 minus
  s = ReplaceAll(s, "\xC3\x97", "\\times ");    // ×
  s = ReplaceAll(s, "\xC2\xB7", "\\cdot ");     // ·
  s = ReplaceAll(s, "\xCF\x80", "\\pi ");       // π
  s = ReplaceAll(s, "\xE2\x88\x9A", "\\sqrt");  // √
  s = ReplaceAll(s, "\xC2\xB0", "");            // °
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
  s = ReplaceAll(s, "{,}", ",");
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

EquivalenceResult AnswersEquivalent(std::string_view pred, std::string_view gold,
                                    const EquivalenceOptions& options) {
  Checker checker(options);
  return checker.Check(pred, gold, 0);
}

std::string SquadNormalize(std::string_view text) {
  std::string lower;
  for (char c : text) {
    if (std::ispunct(static_cast<unsigned char>(c))) continue;
    lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  std::string out;
  size_t i = 0;
  while (i < lower.size()) {
    while (i < lower.size() && IsSpace(lower[i])) ++i;
    size_t j = i;
    while (j < lower.size() && !IsSpace(lower[j])) ++j;
    std::string_view w(lower.data() + i, j - i);
    if (!w.empty() && w != "a" && w != "an" && w != "the") {
      if (!out.empty()) out += ' ';
      out.append(w);
    }
    i = j;
  }
  return out;
}

bool ExactMatch(std::string_view pred, std::string_view gold) {
  return SquadNormalize(pred) == SquadNormalize(gold);
}

}  // namespace allot::rewards
