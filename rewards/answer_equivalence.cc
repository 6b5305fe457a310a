#include "rewards/answer_equivalence.h"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <optional>
#include <vector>

#include "rewards/text_util.h"

namespace allot::rewards {
namespace {

using text::CollapseSpaces;
using text::IsAlpha;
using text::IsSpace;
using text::Trim;

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

// Where the command `name` (\pm, \le, ...) occurs, not followed by a letter.
std::vector<size_t> CommandPositions(std::string_view s, std::string_view name) {
  std::vector<size_t> out;
  for (size_t p = s.find(name); p != std::string_view::npos; p = s.find(name, p + 1)) {
    if (p + name.size() == s.size() || !IsAlpha(s[p + name.size()])) out.push_back(p);
  }
  return out;
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
  for (std::string_view sep : {",", " or "}) {  // "x = 2 \text{ or } x = 5" lists its roots
    if (std::vector<std::string> e = SplitTopLevel(s, sep); e.size() > 1) {
      st.kind = Structure::kList;
      st.elements = std::move(e);
      return st;
    }
  }
  // "2 \pm \sqrt{3}" is the set of both roots; a \mp goes the other way. Two \pm are
  // ambiguous (two signs or four) and stay unparsed.
  const std::vector<size_t> pm = CommandPositions(s, "\\pm"), mp = CommandPositions(s, "\\mp");
  if (pm.size() + mp.size() == 1 || (pm.size() == 1 && mp.size() == 1)) {
    st.kind = Structure::kSet;
    for (const char* sign : {"+-", "-+"}) {
      std::string e;
      size_t pos = 0;
      for (size_t i = 0; i < s.size();) {
        const bool is_pm = std::find(pm.begin(), pm.end(), i) != pm.end();
        const bool is_mp = std::find(mp.begin(), mp.end(), i) != mp.end();
        if (is_pm || is_mp) {
          e.append(s.substr(pos, i - pos));
          e += is_pm ? sign[0] : sign[1];
          i += 3;
          pos = i;
        } else {
          ++i;
        }
      }
      e.append(s.substr(pos));
      st.elements.emplace_back(Trim(e));
    }
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

bool IsNumberLiteral(std::string_view s) {
  s = Trim(s);
  if (!s.empty() && s.front() == '-') s.remove_prefix(1);
  if (s.empty()) return false;
  for (char c : s) {
    if (!text::IsDigit(c) && c != '.') return false;
  }
  return true;
}

// The left-hand side of a labelled answer: a variable ("x = 3"), a function at variables or
// numbers ("f(x) = 1", "g(2) = 5"), or a tuple of variables ("(p, q) = (3, 2)"). Not "2x" or
// "x(x+1)", whose equations still have to be solved.
bool IsLabel(std::string_view s) {
  s = Trim(s);
  if (IsVariableName(s)) return true;
  if (s.size() < 3 || s.back() != ')') return false;
  const size_t open = s.find('(');
  if (open == std::string_view::npos) return false;
  const std::string_view name = s.substr(0, open);
  if (!name.empty() && !IsVariableName(name)) return false;
  const std::vector<std::string> args = SplitTopLevel(s.substr(open + 1, s.size() - open - 2), ",");
  for (const std::string& a : args) {
    if (!IsVariableName(a) && (name.empty() || !IsNumberLiteral(a))) return false;
  }
  return !name.empty() || args.size() > 1;
}

// An inequality in one variable as the interval (or union of intervals) it describes:
// "x > 2" -> "(2, \infty)", "-1 \le x < 3" -> "[-1, 3)", "x < -1 or x > 3" ->
// "(-\infty, -1) \cup (3, \infty)". Relations arrive spelt <, >, \le, \ge (answer_normalizer.h).
struct Inequality {
  std::string variable;
  std::string intervals;
};

std::optional<Inequality> AsIntervals(std::string_view s) {
  Inequality out;
  for (const std::string& part : SplitTopLevel(s, " or ")) {
    // Operands and relations at the top level: "-1", "\le", "x", "<", "3".
    std::vector<std::string> operands;
    std::string ops;  // '<' or '>' per relation, upper case when it includes equality
    int depth = 0;
    size_t start = 0;
    for (size_t i = 0; i < part.size(); ++i) {
      const char c = part[i];
      if (c == '(' || c == '[' || c == '{') ++depth;
      if (c == ')' || c == ']' || c == '}') --depth;
      if (depth != 0) continue;
      size_t len = 0;
      char op = 0;
      if (c == '<' || c == '>') {
        op = c;
        len = 1;
      } else if (part.compare(i, 3, "\\le") == 0 || part.compare(i, 3, "\\ge") == 0) {
        if (i + 3 < part.size() && IsAlpha(part[i + 3])) continue;  // \left, \geq...
        op = part[i + 1] == 'l' ? 'L' : 'G';
        len = 3;
      }
      if (op == 0) continue;
      operands.emplace_back(Trim(std::string_view(part).substr(start, i - start)));
      ops += op;
      start = i + len;
      i = start - 1;
    }
    operands.emplace_back(Trim(std::string_view(part).substr(start)));
    if (ops.empty() || ops.size() > 2) return std::nullopt;
    for (const std::string& o : operands) {
      if (o.empty()) return std::nullopt;
    }
    auto less = [](char op) { return op == '<' || op == 'L'; };
    auto inclusive = [](char op) { return op == 'L' || op == 'G'; };
    std::string variable, lo = "-\\infty", hi = "\\infty";
    char lo_bracket = '(', hi_bracket = ')';
    if (ops.size() == 1) {
      // "x < b" or "b < x": the variable is the side that is a name, the other the bound.
      const bool var_left = IsVariableName(operands[0]) && !IsVariableName(operands[1]);
      const bool var_right = IsVariableName(operands[1]) && !IsVariableName(operands[0]);
      if (var_left == var_right) return std::nullopt;
      variable = var_left ? operands[0] : operands[1];
      const std::string& bound = var_left ? operands[1] : operands[0];
      const bool upper = less(ops[0]) == var_left;  // x < b and b > x bound x from above
      (upper ? hi : lo) = bound;
      (upper ? hi_bracket : lo_bracket) =
          inclusive(ops[0]) ? (upper ? ']' : '[') : (upper ? ')' : '(');
    } else {
      // "a < x \le b" or "b > x \ge a": one direction, the variable in the middle.
      if (less(ops[0]) != less(ops[1]) || !IsVariableName(operands[1]) ||
          IsVariableName(operands[0]) || IsVariableName(operands[2])) {
        return std::nullopt;
      }
      variable = operands[1];
      const bool up = less(ops[0]);
      lo = up ? operands[0] : operands[2];
      hi = up ? operands[2] : operands[0];
      const char lo_op = up ? ops[0] : ops[1], hi_op = up ? ops[1] : ops[0];
      lo_bracket = inclusive(lo_op) ? '[' : '(';
      hi_bracket = inclusive(hi_op) ? ']' : ')';
    }
    variable = Compact(variable);
    if (!out.variable.empty() && out.variable != variable) return std::nullopt;
    out.variable = variable;
    if (!out.intervals.empty()) out.intervals += " \\cup ";
    out.intervals += lo_bracket + lo + ", " + hi + hi_bracket;
  }
  return out;
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

// A word of three or more letters that is not a LaTeX command or a function name ("apples" in
// "5 apples and 3"). Such text is compared as words, never multiplied out as symbols.
bool HasProseWord(std::string_view s) {
  static constexpr std::string_view kFunctions[] = {
      "sin",    "cos",    "tan",  "cot",  "sec",  "csc", "log", "exp", "sqrt", "arcsin",
      "arccos", "arctan", "sinh", "cosh", "tanh", "max", "min", "gcd", "lcm"};
  bool found = false;
  text::ForEachWord(s, [&](std::string_view word, size_t i) {
    const bool command = i > 0 && s[i - 1] == '\\';
    found = !command && word.size() >= 3 &&
            std::find(std::begin(kFunctions), std::end(kFunctions), word) == std::end(kFunctions);
    return !found;
  });
  return found;
}

std::string Lowercase(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// A right-hand side that was read from a percentage keeps it: "x = 10\%" vs "x = 0.1".
std::string Percent(const std::string& s, bool percent) { return percent ? s + "\\%" : s; }

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
    // "x \in [1, 3)" is the interval, and so is "1 \le x < 3"; of two inequalities, only
    // ones in the same variable can agree.
    std::string variable[2];
    for (int k = 0; k < 2; ++k) {
      NormalizedAnswer* n = k == 0 ? &np : &ng;
      size_t in = n->text.find("\\in ");
      if (in != std::string::npos && IsVariableName(n->text.substr(0, in))) {
        n->text = std::string(Trim(std::string_view(n->text).substr(in + 4)));
      } else if (std::optional<Inequality> i = AsIntervals(n->text)) {
        n->text = std::move(i->intervals);
        variable[k] = std::move(i->variable);
      }
    }
    if (!variable[0].empty() && !variable[1].empty() && variable[0] != variable[1]) {
      return {false, "variable"};
    }
    // Labelled answers: "x = 3", "f(x) = 1", "(p, q) = (3, 2)" against a bare value are the
    // value. Two equations keep their left-hand sides (below).
    {
      std::vector<std::string> ep = SplitTopLevel(np.text, "="), eg = SplitTopLevel(ng.text, "=");
      if (ep.size() == 2 && eg.size() == 1 && IsLabel(ep[0])) np.text = ep[1];
      if (eg.size() == 2 && ep.size() == 1 && IsLabel(eg[0])) ng.text = eg[1];
      if (ep.size() == 2 && eg.size() == 2 && Compact(ep[0]) == Compact(eg[0]) && depth < 3) {
        EquivalenceResult r =
            Check(Percent(ep[1], np.percent), Percent(eg[1], ng.percent), depth + 1);
        return {r.equivalent, r.equivalent ? "equation" : r.reason};
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
      if (HasProseWord(np.text) || HasProseWord(ng.text)) return {false, "words"};
      std::string dp = "(" + ep[0] + ")-(" + ep[1] + ")", dg = "(" + eg[0] + ")-(" + eg[1] + ")";
      EquivalenceResult r = Scalar(dp, false, dg, false);
      if (r.equivalent) return {true, "equation"};
      r = Scalar(dp, false, "-(" + dg + ")", false);
      if (r.equivalent) return {true, "equation"};
      return {false, r.reason};
    }
    // Labels were dropped above: what is left is an equation still to be solved ("2x = 6").
    if (ep.size() == 2 || eg.size() == 2) return {false, "equation_vs_value"};
    return Scalar(np.text, np.percent, ng.text, ng.percent);
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
    if (HasProseWord(p) || HasProseWord(g)) return {false, "words"};
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
    // A bare list is ordered against a tuple: "3, 2" and "x = 3, y = 2" are the pair (3, 2).
    auto paren_tuple = [](const Structure& s) {
      return s.kind == Structure::kTuple && s.open == '(' && s.close == ')';
    };
    const bool list_as_tuple = (p.kind == Structure::kList && paren_tuple(g)) ||
                               (g.kind == Structure::kList && paren_tuple(p));
    auto kinds_match = [&]() {
      if (p.kind == g.kind) return true;
      // A bare list and a set are both unordered collections.
      auto unordered = [](Structure::Kind k) {
        return k == Structure::kList || k == Structure::kSet;
      };
      return (unordered(p.kind) && unordered(g.kind)) || list_as_tuple;
    };
    if (!kinds_match()) return {false, "structure"};
    // "(1,000, 2)": a part such as "000" is a thousands group, not a number of its own, so the
    // split cannot be trusted either way.
    for (const Structure* s : {&p, &g}) {
      for (const std::string& e : s->elements) {
        if (e.size() > 1 && e[0] == '0' && text::IsDigit(e[1])) return {false, "ambiguous"};
      }
    }
    if (p.elements.size() != g.elements.size()) return {false, "structure_size"};
    if (static_cast<int>(p.elements.size()) > options_.max_elements) return {false, "too_many"};
    if (p.kind == Structure::kTuple || list_as_tuple) {
      if (!list_as_tuple && (p.open != g.open || p.close != g.close)) return {false, "brackets"};
      for (size_t i = 0; i < p.elements.size(); ++i) {
        if (!Check(p.elements[i], g.elements[i], depth + 1).equivalent) {
          return {false, "element " + std::to_string(i)};
        }
      }
      return {true, list_as_tuple || (p.open == '(' && p.close == ')') ? "tuple" : "interval"};
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
