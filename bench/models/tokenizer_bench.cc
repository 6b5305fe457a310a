// Encode throughput of allot's BPE tokenizer on one core, in MB/s of UTF-8 input.
//
//   allot_tokenizer_bench TOKENIZER_JSON TEXT_FILE [MIN_SECONDS]
//
// The text is split into lines (documents) that are encoded one by one, after one untimed
// warm-up pass, for at least MIN_SECONDS (default 3) of process CPU time. Prints
// "allot_mb_per_s <x>" (MB per CPU second) and the token count, which
// bench/models/tokenizer_bench.sh compares with the JS reference.
#include <time.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "models/tokenizer/tokenizer.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s TOKENIZER_JSON TEXT_FILE [MIN_SECONDS]\n", argv[0]);
    return 2;
  }
  const double min_seconds = argc > 3 ? std::atof(argv[3]) : 3.0;
  auto tokenizer = allot::models::LoadTokenizer(argv[1]);
  if (!tokenizer.ok()) {
    std::fprintf(stderr, "%s\n", tokenizer.status().ToString().c_str());
    return 1;
  }
  std::ifstream in(argv[2], std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "%s: cannot open\n", argv[2]);
    return 1;
  }
  std::vector<std::string> docs;
  size_t bytes_per_pass = 0;
  for (std::string line; std::getline(in, line);) {
    line.push_back('\n');
    bytes_per_pass += line.size();
    docs.push_back(std::move(line));
  }
  // Token count and a hash of every id in order, so the script can tell that both sides
  // produced the same ids, not only the same speed.
  size_t tokens_per_pass = 0;
  uint32_t ids_hash = 0;
  for (const auto& d : docs) {
    auto ids = (*tokenizer)->Encode(d);
    if (!ids.ok()) {
      std::fprintf(stderr, "%s\n", ids.status().ToString().c_str());
      return 1;
    }
    tokens_per_pass += ids->size();
    for (int32_t id : *ids) ids_hash = ids_hash * 31u + static_cast<uint32_t>(id);
  }
  // Process CPU time, not wall time: the figure then means the same on a busy shared machine,
  // and the JS side measures the same quantity (process.cpuUsage, its GC threads included).
  const auto cpu_seconds = [] {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  };
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const double cpu_start = cpu_seconds();
  size_t passes = 0;
  double elapsed = 0;
  size_t sink = 0;
  do {
    for (const auto& d : docs) sink += (*tokenizer)->Encode(d)->size();
    ++passes;
    elapsed = cpu_seconds() - cpu_start;
  } while (elapsed < min_seconds);
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  const double mb = static_cast<double>(bytes_per_pass * passes) / 1e6;
  std::printf("allot_mb_per_s %.3f\n", mb / elapsed);
  std::printf("allot_mb_per_wall_s %.3f\n", mb / wall);
  std::printf("allot_tokens %zu\n", tokens_per_pass);
  std::printf("allot_ids_hash %u\n", ids_hash);
  std::printf("allot_passes %zu (%zu bytes each, checksum %zu)\n", passes, bytes_per_pass, sink);
  return 0;
}
