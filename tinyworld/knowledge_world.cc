#include "tinyworld/knowledge_world.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <functional>
#include <set>

namespace allot::tinyworld {
namespace {

std::string N(int64_t v) { return std::to_string(v); }

const std::vector<std::string> kOnsets = {"b", "br", "d",  "dr", "f",  "g", "gr", "k",
                                          "l", "m",  "n",  "p",  "qu", "r", "s",  "st",
                                          "t", "th", "tr", "v",  "w",  "z"};
const std::vector<std::string> kVowels = {"a", "e", "i", "o", "u", "ae", "ou", "ei"};
const std::vector<std::string> kCodas = {"", "", "n", "r", "l", "m", "sk", "nd", "v"};
const std::vector<std::string> kTownEnds = {"holt", "wick", "mere", "ford", "stead", "dale"};
const std::vector<std::string> kTrades = {
    "lamp maker", "rope maker",   "salt trader",  "bell founder", "map drawer",
    "bee keeper", "glass blower", "clock mender", "boat builder", "cheese maker"};
const std::vector<std::string> kAnimals = {"goats", "sheep", "geese", "horses", "pigs", "hens"};

}  // namespace

// Generates capitalized words no other call of this generator returned.
class NameMaker {
 public:
  explicit NameMaker(SplitMix64& rng) : rng_(rng) {}

  // Marks `word` as taken, as if Word() had returned it.
  void Reserve(const std::string& word) { stems_.insert(Stem(word)); }

  Result<std::string> Word(int syllables, const std::string& ending = "") {
    for (int attempt = 0; attempt < 10000; ++attempt) {
      std::string w;
      for (int i = 0; i < syllables; ++i) {
        w += rng_.Pick(kOnsets) + rng_.Pick(kVowels);
        if (i + 1 == syllables && ending.empty()) w += rng_.Pick(kCodas);
      }
      w += ending;
      if (w.size() < 4 || !stems_.insert(Stem(w)).second) continue;
      w[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(w[0])));
      return w;
    }
    return ResourceExhausted("tiny world: ran out of distinct names; ask for fewer entities");
  }

 private:
  // Distinct also after the stemming FTS5's porter tokenizer might do (a trailing s, e or y),
  // so that no two names fall into one index term.
  static std::string Stem(std::string w) {
    for (char& c : w) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    while (!w.empty() && (w.back() == 's' || w.back() == 'e' || w.back() == 'y')) w.pop_back();
    return w;
  }

  SplitMix64& rng_;
  std::set<std::string> stems_;
};

namespace {

// `what` names the missing fact: "the founding year of Vemere".
SolutionStep Search(const std::string& what, std::string query, std::string result) {
  SolutionStep s;
  s.subtask = "Search for " + what + ".";
  s.text = "I need " + what + ".";
  s.tool_query = "search " + query;
  s.tool_result = std::move(result);
  return s;
}

SolutionStep Read(const std::string& what, std::string text) {
  SolutionStep s;
  s.subtask = "Read " + what + " from the result.";
  s.text = std::move(text);
  return s;
}

TaskItem FactItem(std::string_view bucket, std::string question, std::string answer,
                  const std::string& entity, const std::string& page_id) {
  TaskItem t;
  t.kind = "fact";
  t.difficulty = std::string(bucket);
  t.min_level = 4;
  t.question = std::move(question);
  t.answer = std::move(answer);
  t.value = t.answer;
  t.entity = entity;
  t.page_id = page_id;
  t.key = t.question;
  return t;
}

// `text` with every maximal run of letters replaced by f(run).
std::string MapWords(const std::string& text,
                     const std::function<std::string(const std::string&)>& f) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    size_t j = i;
    while (j < text.size() && std::isalpha(static_cast<unsigned char>(text[j]))) ++j;
    if (j == i) {
      out += text[i++];
    } else {
      out += f(text.substr(i, j - i));
      i = j;
    }
  }
  return out;
}

}  // namespace

CorpusPage KnowledgeWorld::PageOf(const Town& t) const {
  return {t.id, t.name,
          t.name + " is a town on the river " + t.river + ". " + t.name + " was founded in " +
              N(t.founded) + ". " + t.name + " has " + N(t.inhabitants) + " inhabitants."};
}

CorpusPage KnowledgeWorld::PageOf(const Person& p) const {
  return {p.id, p.name,
          p.name + " is a " + p.trade + " who lives in " + towns[p.town].name + ". " + p.name +
              " was born in " + N(p.born) + ". " + p.name + " keeps " + N(p.herd) + " " +
              p.animals + "."};
}

std::vector<CorpusPage> KnowledgeWorld::Corpus() const {
  std::vector<CorpusPage> out;
  for (const Town& t : towns) out.push_back(PageOf(t));
  for (const Person& p : people) out.push_back(PageOf(p));
  return out;
}

Result<KnowledgeWorld> MakeKnowledgeWorld(const KnowledgeWorldConfig& config, SplitMix64& rng) {
  if (config.towns < 1 || config.people < 1) {
    return InvalidArgument("tiny world: knowledge.towns and knowledge.people must be >= 1");
  }
  KnowledgeWorld w;
  NameMaker names(rng);
  std::vector<std::string> rivers;
  for (int64_t i = 0; i < (config.towns + 2) / 3; ++i) {
    ALLOT_ASSIGN_OR_RETURN(std::string r, names.Word(2));
    rivers.push_back(std::move(r));
  }
  char id[32];
  for (int64_t i = 0; i < config.towns; ++i) {
    Town t;
    std::snprintf(id, sizeof(id), "town-%04lld", static_cast<long long>(i));
    t.id = id;
    ALLOT_ASSIGN_OR_RETURN(t.name, names.Word(1, rng.Pick(kTownEnds)));
    t.river = rng.Pick(rivers);
    t.founded = rng.Range(900, 1599);
    t.inhabitants = rng.Range(200, 9999);
    t.test = rng.Percent(config.test_percent);
    w.towns.push_back(std::move(t));
  }
  for (int64_t i = 0; i < config.people; ++i) {
    Person p;
    std::snprintf(id, sizeof(id), "person-%04lld", static_cast<long long>(i));
    p.id = id;
    ALLOT_ASSIGN_OR_RETURN(std::string first, names.Word(2));
    ALLOT_ASSIGN_OR_RETURN(std::string last, names.Word(1 + static_cast<int>(rng.Below(2))));
    p.name = first + " " + last;
    p.town = rng.Below(w.towns.size());
    p.trade = rng.Pick(kTrades);
    p.animals = rng.Pick(kAnimals);
    p.born = std::max<int64_t>(w.towns[p.town].founded + 1, rng.Range(1400, 1899));
    p.herd = rng.Range(2, 99);
    // People share their town's split: a train page never names a test town, so nothing
    // about a test entity appears in the train data.
    p.test = w.towns[p.town].test;
    w.people.push_back(std::move(p));
  }
  for (int i = 0; i < 40; ++i) {
    ALLOT_ASSIGN_OR_RETURN(std::string n, names.Word(2));
    w.first_names.push_back(std::move(n));
  }
  return w;
}

std::vector<std::string> FactBuckets() { return {"fact", "fact2"}; }

std::vector<TaskItem> AllFactItems(const KnowledgeWorld& w, std::string_view bucket,
                                   std::string_view split) {
  const bool test = split == "test";
  std::vector<TaskItem> out;
  if (bucket == "fact") {
    for (const Town& t : w.towns) {
      if (t.test != test) continue;
      const std::string page = w.PageOf(t).text;
      auto add = [&](std::string q, std::string a, const std::string& what, std::string query,
                     std::string read) {
        TaskItem it = FactItem(bucket, std::move(q), std::move(a), t.name, t.id);
        it.steps = {Search(what, std::move(query), page), Read(what, std::move(read))};
        out.push_back(std::move(it));
      };
      add("In which year was " + t.name + " founded?", N(t.founded),
          "the founding year of " + t.name, t.name + " founded",
          t.name + " was founded in " + N(t.founded) + ".");
      add("How many inhabitants does " + t.name + " have?", N(t.inhabitants),
          "the number of inhabitants of " + t.name, t.name + " inhabitants",
          t.name + " has " + N(t.inhabitants) + " inhabitants.");
      add("On which river is " + t.name + "?", t.river, "the river of " + t.name, t.name + " river",
          t.name + " is on the river " + t.river + ".");
    }
    for (const Person& p : w.people) {
      if (p.test != test) continue;
      const std::string page = w.PageOf(p).text;
      const std::string& town = w.towns[p.town].name;
      auto add = [&](std::string q, std::string a, const std::string& what, std::string query,
                     std::string read) {
        TaskItem it = FactItem(bucket, std::move(q), std::move(a), p.name, p.id);
        it.steps = {Search(what, std::move(query), page), Read(what, std::move(read))};
        out.push_back(std::move(it));
      };
      add("In which year was " + p.name + " born?", N(p.born), "the birth year of " + p.name,
          p.name + " born", p.name + " was born in " + N(p.born) + ".");
      add("What is the trade of " + p.name + "?", p.trade, "the trade of " + p.name,
          p.name + " trade", p.name + " is a " + p.trade + ".");
      add("In which town does " + p.name + " live?", town, "the home town of " + p.name,
          p.name + " lives", p.name + " lives in " + town + ".");
      add("How many " + p.animals + " does " + p.name + " keep?", N(p.herd),
          "the number of " + p.animals + " of " + p.name, p.name + " " + p.animals,
          p.name + " keeps " + N(p.herd) + " " + p.animals + ".");
    }
  } else if (bucket == "fact2") {
    for (const Person& p : w.people) {
      const Town& t = w.towns[p.town];
      if (p.test != test) continue;
      TaskItem it = FactItem(bucket, "On which river is the town where " + p.name + " lives?",
                             t.river, p.name, t.id);
      const std::string home = "the home town of " + p.name, river = "the river of " + t.name;
      it.steps = {Search(home, p.name + " lives", w.PageOf(p).text),
                  Read(home, p.name + " lives in " + t.name + "."),
                  Search(river, t.name + " river", w.PageOf(t).text),
                  Read(river, t.name + " is on the river " + t.river + ".")};
      out.push_back(std::move(it));
    }
  }
  return out;
}

FreshNames::FreshNames(const KnowledgeWorld& world, SplitMix64& rng)
    : maker_(std::make_unique<NameMaker>(rng)), rng_(rng) {
  for (const Town& t : world.towns) {
    for (const std::string& end : kTownEnds) {
      if (t.name.size() > end.size() && t.name.ends_with(end)) shape_[t.name] = end;
    }
    shape_.emplace(t.river, "river");
  }
  for (const Person& p : world.people) {
    const size_t space = p.name.find(' ');
    shape_[p.name.substr(0, space)] = "first";
    if (space != std::string::npos) shape_[p.name.substr(space + 1)] = "last";
  }
  for (const auto& [word, shape] : shape_) maker_->Reserve(word);
  for (const std::string& n : world.first_names) maker_->Reserve(n);
}

FreshNames::~FreshNames() = default;

Result<std::string> FreshNames::Fresh(const std::string& word) {
  const std::string& shape = shape_.at(word);
  if (shape == "first" || shape == "river") return maker_->Word(2);
  // The world's town names have one syllable and an ending, its last names one syllable or
  // two. The ~1,000 short words of each kind run out over a few thousand renamed items, so half
  // of the fresh ones get two syllables, and all of them once the short ones are gone.
  const std::string ending = shape == "last" ? "" : shape;
  if (rng_.Percent(50)) {
    if (auto short_word = maker_->Word(1, ending); short_word.ok()) return short_word;
  }
  return maker_->Word(2, ending);
}

Result<TaskItem> FreshNames::Rename(const TaskItem& item) {
  TaskItem out = item;
  std::vector<std::string*> texts = {&out.question, &out.answer, &out.value, &out.entity, &out.key};
  for (std::string& c : out.choices) texts.push_back(&c);
  for (SolutionStep& s : out.steps) {
    for (std::string* f : {&s.subtask, &s.text, &s.tool_query, &s.tool_result}) texts.push_back(f);
  }
  // Each name word gets its fresh word where it first appears and keeps it in the rest of the
  // item.
  std::map<std::string, std::string> names;
  Status status;
  for (std::string* text : texts) {
    *text = MapWords(*text, [&](const std::string& word) {
      if (!status.ok() || !shape_.contains(word)) return word;
      auto it = names.find(word);
      if (it != names.end()) return it->second;
      auto fresh = Fresh(word);
      if (!fresh.ok()) {
        status = fresh.status();
        return word;
      }
      return names.emplace(word, *fresh).first->second;
    });
  }
  ALLOT_RETURN_IF_ERROR(status);
  return out;
}

}  // namespace allot::tinyworld
