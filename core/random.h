// SplitMix64 (Steele, Lea, Flood 2014; the constants of Vigna's reference code): allot's one
// seeded generator, for every draw that a run must repeat exactly. Every draw is defined here in
// integer arithmetic, so one seed gives the same numbers on any compiler and platform, which
// std:: distributions do not promise. Resume depends on it: the episode seeds of the trainers,
// the evaluations' item order, the datasets' shuffles and the tiny world's data are all drawn
// here, and a changed output changes what a resumed run sees.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace allot {

// The Weyl increment of SplitMix64 (2^64 / golden ratio).
inline constexpr uint64_t kSplitMix64Gamma = 0x9e3779b97f4a7c15ull;

// The n-th output (from 0) of SplitMix64(seed), without drawing the ones before: independent
// seeds for episode n of a run seeded `seed`.
constexpr uint64_t SplitMix64Draw(uint64_t seed, uint64_t n) {
  uint64_t z = seed + kSplitMix64Gamma * (n + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// SplitMix64Draw(x, 0): a bijective mix of x, to derive one seed from another
// (SplitMix64Hash(seed ^ SplitMix64Hash(step))).
constexpr uint64_t SplitMix64Hash(uint64_t x) { return SplitMix64Draw(x, 0); }

// FNV-1a's xor-multiply over the bytes of `bytes`, from the offset basis 1469598103934665603:
// the standard basis (14695981039346656037) short of its last digit. Every copy of this hash
// used that number, and the tiny world's data, the datasets' option shuffles and the knowledge
// index's corpus stamps were made with it, so it stays; it is not the published FNV-1a.
constexpr uint64_t ByteHash64(std::string_view bytes) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// The generator. Cheap to copy: a copy continues the same stream.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}

  uint64_t Next() {
    const uint64_t z = SplitMix64Hash(state_);
    state_ += kSplitMix64Gamma;
    return z;
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

  // Fisher-Yates with Below(): position i - 1 takes the element at Below(i), i from size down.
  template <typename T>
  void Shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[Below(i)]);
  }

  // An independent stream for a named part of a whole, so that adding draws to one part does
  // not shift the draws of another.
  SplitMix64 Fork(std::string_view name) const {
    SplitMix64 child(state_ ^ ByteHash64(name));
    child.Next();
    return child;
  }

 private:
  uint64_t state_;
};

}  // namespace allot
