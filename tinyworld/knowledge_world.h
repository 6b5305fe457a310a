// The tiny world's fictional knowledge base: generated people and towns whose facts (birth
// years, trades, herds, founding years, inhabitants, rivers) exist only in a corpus of
// {"id", "title", "text"} pages, the format tools/knowledge_base.h indexes with FTS5. No
// model can know them without the search tool, which makes fact questions CogER's L4.
//
// Every word of every name is distinct across the whole world, so that a search for an
// entity's name ranks its own page first.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/config/schema.h"
#include "core/random.h"
#include "core/status.h"
#include "tinyworld/task_item.h"

namespace allot::tinyworld {

struct Town {
  std::string id;    // corpus page id, "town-0007"
  std::string name;  // "Brimholt"
  std::string river;
  int64_t founded = 0;
  int64_t inhabitants = 0;
  bool test = false;  // questions about it belong to the test split
};

struct Person {
  std::string id;    // "person-0042"
  std::string name;  // "Orvalen Tusk"
  size_t town = 0;   // index into KnowledgeWorld::towns
  std::string trade;
  std::string animals;  // plural: "goats"
  int64_t born = 0;
  int64_t herd = 0;   // how many animals
  bool test = false;  // always the split of the person's town
};

struct CorpusPage {
  std::string id, title, text;
};

struct KnowledgeWorldConfig {
  int64_t people = 480;
  int64_t towns = 80;
  int64_t test_percent = 25;  // towns (with their people) whose questions form the test split

  void Describe(config::Visitor& v) {
    v.Field("people", people, {.doc = "fictional people in the corpus", .min = 1});
    v.Field("towns", towns, {.doc = "fictional towns in the corpus", .min = 1});
    v.Field("test_percent", test_percent,
            {.doc = "share of towns (and their people) whose questions form the test split",
             .min = 0,
             .max = 100});
  }
};

struct KnowledgeWorld {
  std::vector<Town> towns;
  std::vector<Person> people;
  std::vector<std::string> first_names;  // extra first names for word problems

  // One page per town and per person, towns first.
  std::vector<CorpusPage> Corpus() const;
  CorpusPage PageOf(const Town& t) const;
  CorpusPage PageOf(const Person& p) const;
};

class NameMaker;  // knowledge_world.cc: capitalized words no earlier call returned

// Fresh names for the SFT data (SftConfig::fresh_names_percent). A fact item renamed by it asks
// the same question about an entity nobody else is called: every name word of the world in the
// item (person, town, river) becomes a new word of the same shape, the same new word everywhere
// in the item (question, steps, tool queries and results, choices, answer). Trained on the
// world's own train names, the tiny tiers memorise the ~450 of them and, asked about a test
// entity, search for a train look-alike; with fresh names the only way to a right query is to
// copy the name from the question, and the only way to the next query is to copy it from the
// result. No fresh name is a name of the world or of another renamed item.
class FreshNames {
 public:
  // Draws from `rng`, which must outlive it.
  FreshNames(const KnowledgeWorld& world, SplitMix64& rng);
  ~FreshNames();
  Result<TaskItem> Rename(const TaskItem& item);

 private:
  Result<std::string> Fresh(const std::string& word);

  std::unique_ptr<NameMaker> maker_;
  SplitMix64& rng_;
  std::map<std::string, std::string> shape_;  // world name word -> "first", "last", "river" or
                                              // a town ending ("holt")
};

Result<KnowledgeWorld> MakeKnowledgeWorld(const KnowledgeWorldConfig& config, SplitMix64& rng);

// Fact buckets: "fact" asks one attribute of a person or a town (one search); "fact2" asks the
// river of a person's home town (two searches).
std::vector<std::string> FactBuckets();

// Every fact question of `bucket` about the entities of `split` ("train" or "test"), in a
// fixed order; kind, difficulty, min_level (4), question, answer, value, steps (with their
// search queries and results), entity, page_id and key are set.
std::vector<TaskItem> AllFactItems(const KnowledgeWorld& world, std::string_view bucket,
                                   std::string_view split);

}  // namespace allot::tinyworld
