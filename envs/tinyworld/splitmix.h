// SplitMix64 (Steele, Lea, Flood 2014; the constants of Vigna's reference code): the tiny
// world's only source of randomness. Every draw is defined here in integer arithmetic, so one
// seed gives byte-identical data on any compiler and platform, which std:: distributions do not
// promise.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace allot::envs::tinyworld {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}

  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

  // Uniform in [0, n), n > 0, by rejection (no modulo bias).
  uint64_t Below(uint64_t n) {
    const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do {
      x = Next();
    } while (x >= limit);
    return x % n;
  }

  // Uniform in [lo, hi], lo <= hi.
  int64_t Range(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(Below(static_cast<uint64_t>(hi - lo) + 1));
  }

  // True with probability percent / 100.
  bool Percent(int64_t percent) { return static_cast<int64_t>(Below(100)) < percent; }

  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[Below(v.size())];
  }

  // Fisher-Yates with Below().
  template <typename T>
  void Shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[Below(i)]);
  }

  // An independent stream for a named part of the world, so that adding items to one part
  // does not shift the draws of another.
  SplitMix64 Fork(const std::string& name) const {
    uint64_t h = 1469598103934665603ull;  // FNV-1a 64 of the name, mixed with the state
    for (unsigned char c : name) {
      h ^= c;
      h *= 1099511628211ull;
    }
    SplitMix64 child(state_ ^ h);
    child.Next();
    return child;
  }

 private:
  uint64_t state_;
};

}  // namespace allot::envs::tinyworld
