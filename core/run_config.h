// Config sections that every run has: its name and seed, logging, and checkpointing.
#pragma once

#include <cstdint>
#include <string>

#include "core/config/schema.h"

namespace allot {

struct RunConfig {
  std::string name = "run";
  std::string output_dir = "runs";  // run directories are created under it
  int64_t seed = 0;
  // allot train | sft | resume: a learner rank that dies stops the others and every rank starts
  // again from the last verified checkpoint, up to this many times (--max-restarts overrides).
  int max_restarts = 0;

  void Describe(config::Visitor& v) {
    v.Field("name", name, {.doc = "run directory name under output_dir ([A-Za-z0-9._-])"});
    v.Field("output_dir", output_dir, {.doc = "where run directories live"});
    v.Field("seed", seed, {.doc = "seed for every RNG of the run", .min = 0.0});
    v.Field("max_restarts", max_restarts,
            {.doc = "restarts of the learner ranks from the last verified checkpoint after a "
                    "rank dies (local launcher of allot train | sft | resume)",
             .min = 0.0});
  }
};

struct LoggingConfig {
  std::string level = "info";
  bool tensorboard = true;
  bool progress_bar = true;
  int log_every = 1;  // steps between metrics lines

  void Describe(config::Visitor& v) {
    v.Field("level", level, {.choices = {"trace", "debug", "info", "warn", "error", "off"}});
    v.Field("tensorboard", tensorboard, {.doc = "write TensorBoard event files under tb/"});
    v.Field("progress_bar", progress_bar, {.doc = "progress bar (plain lines when not a TTY)"});
    v.Field("log_every", log_every, {.doc = "steps between metrics records", .min = 1.0});
  }
};

struct CheckpointConfig {
  int every = 100;     // steps (or episodes, for DQN) between checkpoints
  int keep_last = 3;   // 0 keeps all

  void Describe(config::Visitor& v) {
    v.Field("every", every, {.doc = "steps between checkpoints", .min = 1.0});
    v.Field("keep_last", keep_last, {.doc = "checkpoints kept on disk; 0 keeps all", .min = 0.0});
  }
};

}  // namespace allot
