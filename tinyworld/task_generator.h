// The tiny world's data: a seeded, deterministic generator of arithmetic and fact
// problems with disjoint train and test splits, multiple-choice variants, the knowledge corpus
// the fact questions need, and the SFT data that teaches the tiny models the task formats.
//
// Determinism: every draw comes from SplitMix64 (core/random.h), each bucket from its own forked
// stream, and JSON is written with sorted keys, so one seed gives the same bytes everywhere.
// Disjointness: test items are drawn first and their questions reserved; a train item never
// repeats a test question, and fact questions of each split are about that split's entities.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/config/schema.h"
#include "core/status.h"
#include "tinyworld/knowledge_world.h"
#include "tinyworld/sft_records.h"
#include "tinyworld/task_item.h"

namespace allot::tinyworld {

struct TinyWorldConfig {
  int64_t seed = 1;
  // Items per bucket and split; a bucket with fewer distinct questions gives all it has, a
  // fifth of them (at most test_per_bucket) to the test split.
  int64_t train_per_bucket = 1200;
  int64_t test_per_bucket = 100;
  // Share of open items that also get a four-option multiple-choice variant.
  int64_t mc_percent = 30;
  std::vector<std::string> buckets;  // empty = all of AllBuckets()
  // RLoT's long sums (arithmetic_tasks.h, bucket "long"), in files of their own.
  int64_t long_train = 1000;
  int64_t long_test = 100;
  KnowledgeWorldConfig knowledge;
  SftConfig sft;

  void Describe(config::Visitor& v) {
    v.Field("seed", seed, {.doc = "the one seed of the whole world"});
    v.Field("train_per_bucket", train_per_bucket, {.doc = "train items per bucket", .min = 0});
    v.Field("test_per_bucket", test_per_bucket, {.doc = "test items per bucket", .min = 0});
    v.Field("mc_percent", mc_percent,
            {.doc = "open items that get a multiple-choice variant", .min = 0, .max = 100});
    v.Field("buckets", buckets, {.doc = "buckets to generate (empty = all)"});
    v.Field("long_train", long_train,
            {.doc = "long sums for RLoT (long_train.jsonl, sft_rlot.jsonl)", .min = 0});
    v.Field("long_test", long_test, {.doc = "held-out long sums (long_test.jsonl)", .min = 0});
    v.Field("knowledge", knowledge, {.doc = "the fictional knowledge base"});
    v.Field("sft", sft, {.doc = "the SFT data of the tiny models"});
  }
};

// Arithmetic buckets easiest first, then the fact buckets.
std::vector<std::string> AllBuckets();

struct TinyWorld {
  KnowledgeWorld knowledge;
  // Open items of each split, bucket by bucket in AllBuckets() order, then the
  // multiple-choice variants.
  std::vector<TaskItem> train, test;
  std::vector<SftRecord> sft;       // made from the train split only
  std::vector<SftRecord> practice;  // the drill and a draw of the rest (PracticeRecords)
  // RLoT's long sums, and the logic-block model's data: `practice` and every record of the
  // long train sums (all RLoT formats, Decompose also after steps), shuffled together.
  std::vector<TaskItem> long_train, long_test;
  std::vector<SftRecord> rlot;
};

Result<TinyWorld> GenerateTinyWorld(const TinyWorldConfig& config);

// One JSON object per line, keys sorted.
std::string ItemsJsonl(const std::vector<TaskItem>& items);
std::string CorpusJsonl(const KnowledgeWorld& world);
std::string SftJsonl(const std::vector<SftRecord>& records);

// Writes into `dir` (created if missing): corpus.jsonl, train.jsonl, test.jsonl (open items),
// train_mc.jsonl, test_mc.jsonl (multiple choice), sft_train.jsonl, sft_practice.jsonl,
// long_train.jsonl, long_test.jsonl, sft_rlot.jsonl and
// manifest.json (seed, counts per split and bucket, sha256 of each file, SFT records per format
// and the longest record in bytes). Returns the manifest.
Result<std::string> WriteTinyWorld(const TinyWorld& world, const TinyWorldConfig& config,
                                   const std::string& dir);

}  // namespace allot::tinyworld
