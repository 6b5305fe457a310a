// `allot serve` decoding throughput on CPU: N concurrent HTTP clients against the in-process
// server, each asking for --max-tokens tokens with ignore_eos, at N = 1, 8 and 32. The
// comparison in the same run is the same requests sent one at a time by one client, so the
// ratio is what request batching buys end to end (HTTP, JSON, scheduling included).
//
//   allot_serve_bench [--threads 1] [--max-tokens 64] [--requests 32]
//
// The model is the generation benchmark's tiny Qwen2 shape (byte vocabulary, hidden 256,
// 4 layers, random weights) written to a temp directory.
#include <httplib.h>
#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "llm/serve/server.h"
#include "models/causal_lm.h"
#include "models/cpu_threads.h"
#include "models/tokenizer/byte_tokenizer.h"

namespace {

using nlohmann::json;

double Seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string WriteModel() {
  allot::models::TransformerConfig c;
  allot::models::ByteTokenizer tok;
  c.vocab_size = tok.vocab_size();
  c.hidden_size = 256;
  c.intermediate_size = 704;
  c.num_hidden_layers = 4;
  c.num_attention_heads = 8;
  c.num_key_value_heads = 4;
  c.head_dim = 32;
  c.attention_bias = true;
  c.max_position_embeddings = 4096;
  c.eos_token_ids = {tok.vocab_size() - 1};
  torch::manual_seed(0);
  allot::models::CausalLMImpl model(c, torch::TensorOptions());
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("allot_serve_bench_" + std::to_string(getpid())))
          .string();
  std::filesystem::create_directories(dir);
  if (auto s = model.SaveMerged(dir); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    std::exit(1);
  }
  std::ofstream(dir + "/tokenizer.json") << tok.ToHuggingFaceJson();
  return dir;
}

// `clients` threads share `requests` requests; returns generated tokens per second.
double Run(int port, int clients, int requests, int max_tokens) {
  std::atomic<int> next{0};
  std::atomic<int64_t> tokens{0};
  std::atomic<int> failures{0};
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&] {
      httplib::Client cli("127.0.0.1", port);
      cli.set_read_timeout(600);
      for (int i = next++; i < requests; i = next++) {
        std::vector<int> prompt;
        for (int t = 0; t < 24 + (i % 7); ++t) prompt.push_back((i * 31 + t * 7) % 256);
        json body = {{"prompt", prompt},
                     {"max_tokens", max_tokens},
                     {"temperature", 1.0},
                     {"seed", i},
                     {"ignore_eos", true}};
        auto r = cli.Post("/v1/completions", body.dump(), "application/json");
        if (!r || r->status != 200) {
          ++failures;
          continue;
        }
        tokens += json::parse(r->body)["usage"]["completion_tokens"].get<int64_t>();
      }
    });
  }
  for (auto& t : threads) t.join();
  const double s = Seconds(start);
  if (failures > 0) std::fprintf(stderr, "%d requests failed\n", failures.load());
  return static_cast<double>(tokens) / s;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 1, max_tokens = 64, requests = 32;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--threads") == 0) threads = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--max-tokens") == 0) max_tokens = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--requests") == 0) requests = std::atoi(argv[i + 1]);
  }
  allot::models::SetCpuThreads(threads);
  const std::string dir = WriteModel();
  allot::llm::serve::ServeConfig config;
  config.model = dir;
  config.port = 0;
  config.max_batch = 32;
  auto server = allot::llm::serve::Server::Create(config);
  if (!server.ok()) {
    std::fprintf(stderr, "%s\n", server.status().ToString().c_str());
    return 1;
  }
  auto port = (*server)->Start();
  if (!port.ok()) return 1;
  Run(*port, 4, 8, 8);  // warm-up

  std::printf("allot serve decode throughput: %d torch thread(s), %d requests x %d tokens\n",
              threads, requests, max_tokens);
  const double one_by_one = Run(*port, 1, std::min(requests, 8), max_tokens);
  std::printf("%8s %12s %18s %8s %14s\n", "clients", "tok/s", "one-at-a-time tok/s", "ratio",
              "seqs/step");
  for (int clients : {1, 8, 32}) {
    const int64_t steps_before = (*server)->metrics().batches();
    const int64_t tokens_before = (*server)->metrics().generation_tokens();
    const double tps = Run(*port, clients, std::max(requests, clients), max_tokens);
    const int64_t steps = (*server)->metrics().batches() - steps_before;
    const int64_t tokens = (*server)->metrics().generation_tokens() - tokens_before;
    // A decode step samples one token for each running sequence: tokens / steps is the mean
    // batch size.
    std::printf("%8d %12.0f %18.0f %8.2f %14.1f\n", clients, tps, one_by_one, tps / one_by_one,
                steps > 0 ? static_cast<double>(tokens) / static_cast<double>(steps) : 0.0);
  }
  (*server)->Stop();
  std::filesystem::remove_all(dir);
  return 0;
}
