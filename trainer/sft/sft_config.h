// The sft section: supervised fine-tuning with completion-only loss, the cold start of
// R2-Reasoner's decomposer/allocator and DeepTool's tool reasoner, and how the tiny world's
// models are trained from scratch.
#pragma once

#include <cstdint>
#include <string>

#include "core/config/schema.h"
#include "models/model_config.h"
#include "models/tokenizer/chat_template.h"
#include "trainer/optim/optim_config.h"

namespace allot::trainer {

inline models::LoraConfig SftDefaultLora() {
  models::LoraConfig c;
  c.enabled = false;  // SFT trains every weight unless a recipe asks for an adapter
  return c;
}

struct SftConfig {
  std::string data;             // JSONL: {"prompt","completion"} or {"messages":[...]}
  std::string format = "auto";  // auto | prompt_completion | chat
  bool skip_bad_lines = false;
  std::string init = "pretrained";  // pretrained (model.path weights) | random (config.json)
  int64_t init_seed = 0;            // random init
  double init_std = 0.02;           // random init: transformers' initializer_range (Qwen2, Llama)
  int64_t max_seq_len = 1024;
  std::string overlong = "truncate";  // truncate | drop | error
  bool add_eos = true;                // prompt/completion: end the completion with EOS
  int64_t epochs = 0;                 // > 0: train this many epochs instead of trainer.total_steps
  int64_t batch_size = 8;             // sequences per micro-batch
  bool shuffle = true;
  int64_t bucket_window = 16;  // micro-batches sorted by length together; 1 = off
  bool packing = true;         // each micro-batch runs as one padding-free packed stream
  int64_t threads = 0;         // CPU threads; 0 = LibTorch's default
  OptimConfig optim;
  models::LoraConfig lora = SftDefaultLora();
  models::ChatTemplateConfig chat_template;

  void Describe(config::Visitor& v) {
    v.Field("data", data, {.doc = "training JSONL (prompt/completion or chat messages)"});
    v.Field("format", format,
            {.doc = "line format; auto picks per line",
             .choices = {"auto", "prompt_completion", "chat"}});
    v.Field("skip_bad_lines", skip_bad_lines, {.doc = "count and skip lines that do not parse"});
    v.Field(
        "init", init,
        {.doc = "pretrained: load model.path weights; random: fresh weights from its config.json",
         .choices = {"pretrained", "random"}});
    v.Field("init_seed", init_seed, {.doc = "seed of the random initialisation", .min = 0.0});
    v.Field("init_std", init_std,
            {.doc = "random init: std of the normal weights (transformers' initializer_range)",
             .min = 0.0});
    v.Field("max_seq_len", max_seq_len, {.doc = "longest training sequence in tokens", .min = 2.0});
    v.Field("overlong", overlong,
            {.doc = "an example longer than max_seq_len: truncate its end, drop it, or fail",
             .choices = {"truncate", "drop", "error"}});
    v.Field("add_eos", add_eos, {.doc = "prompt/completion lines: append EOS to the completion"});
    v.Field("epochs", epochs,
            {.doc = "passes over the data; > 0 replaces trainer.total_steps (leave that unset)",
             .min = 0.0});
    v.Field("batch_size", batch_size, {.doc = "sequences per micro-batch", .min = 1.0});
    v.Field("shuffle", shuffle, {.doc = "reshuffle the data every epoch (seeded by run.seed)"});
    v.Field("bucket_window", bucket_window,
            {.doc = "length bucketing: this many micro-batches' worth of examples are sorted by "
                    "length before batching (1 = no bucketing)",
             .min = 1.0});
    v.Field("packing", packing,
            {.doc = "run each micro-batch packed: its examples one after another, each attending "
                    "only to itself (block-diagonal causal mask), no padding computed"});
    v.Field("threads", threads, {.doc = "CPU threads (0 = default)", .min = 0.0});
    v.Field("optim", optim);
    v.Field("lora", lora, {.doc = "train a LoRA adapter instead of all weights (enabled: true)"});
    v.Field("chat_template", chat_template, {.doc = "how chat lines are rendered"});
  }
};

}  // namespace allot::trainer
