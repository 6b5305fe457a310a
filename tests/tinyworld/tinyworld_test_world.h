// A small tiny world shared by the tinyworld_* tests: generated once per test binary.
#pragma once

#include "tinyworld/task_generator.h"

namespace allot::tinyworld {

inline TinyWorldConfig SmallConfig(int64_t seed = 7) {
  TinyWorldConfig c;
  c.seed = seed;
  c.train_per_bucket = 60;
  c.test_per_bucket = 20;
  c.mc_percent = 30;
  c.knowledge.people = 120;
  c.knowledge.towns = 30;
  c.long_train = 40;
  c.long_test = 10;
  return c;
}

inline const TinyWorld& SmallWorld() {
  static const TinyWorld* world = [] {
    auto w = GenerateTinyWorld(SmallConfig());
    return w.ok() ? new TinyWorld(std::move(w).value()) : nullptr;
  }();
  return *world;
}

}  // namespace allot::tinyworld
