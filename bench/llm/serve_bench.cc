// `allot serve` decoding throughput: N concurrent HTTP clients against the in-process server,
// each asking for --max-tokens tokens with ignore_eos. The comparison in the same run is the
// same requests sent one at a time by one client, so the ratio is what request batching buys
// end to end (HTTP, JSON, scheduling included).
//
//   allot_serve_bench [--threads 1] [--max-tokens 64] [--requests 32] [--clients 1,8,32]
//                     [--temperature 1] [--prompt-len 0] [--device cpu] [--dtype auto]
//                     [--cuda-graphs auto|true|false] [--deterministic]
//                     [--model-dir DIR]
//
// Without --model-dir the model is the generation benchmark's tiny Qwen2 shape (byte
// vocabulary, hidden 256, 4 layers, random weights) written to a temp directory. With it, the
// model is a Hugging Face directory (config.json + model.safetensors); when it has no
// tokenizer.json, the byte tokenizer is written there, widened to the model's vocabulary so that
// every sampled id decodes (ids past the bytes decode to nothing). The GPU comparison against
// transformers' generate (bench/gpu/serve_bench_gpu.sh) runs
//
//   allot_serve_bench --model-dir DIR --device cuda --dtype bfloat16 --clients 1,32,256
//                     --requests 1 --max-tokens 128 --prompt-len 128 --temperature 0
//
// --prompt-len 0 keeps the CPU prompts (24-30 byte ids); L > 0 sends L ids drawn uniformly
// from the vocabulary, seeded by the request index. --requests R: each concurrency level N sends
// max(R, N) requests. Besides the table, each measurement is printed as one JSON line.
#include <httplib.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "llm/serve/server.h"
#include "models/causal_lm.h"
#include "models/cpu_threads.h"
#include "models/hf_config.h"
#include "models/tokenizer/byte_tokenizer.h"

namespace {

using nlohmann::json;

struct Options {
  int threads = 1;
  int max_tokens = 64;
  int requests = 32;
  std::vector<int> clients = {1, 8, 32};
  double temperature = 1.0;
  int prompt_len = 0;
  std::string device = "cpu";
  std::string dtype = "auto";
  std::string cuda_graphs = "auto";  // serve.cuda_graphs
  bool deterministic = false;        // serve.deterministic: batch-invariant decoding
  std::string model_dir;
};

double Seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

[[noreturn]] void Fail(const std::string& message) {
  std::fprintf(stderr, "allot_serve_bench: %s\n", message.c_str());
  std::exit(1);
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
  if (auto s = model.SaveMerged(dir); !s.ok()) Fail(s.ToString());
  std::ofstream(dir + "/tokenizer.json") << tok.ToHuggingFaceJson();
  return dir;
}

// A model directory written by transformers has no tokenizer, and its vocabulary (Qwen2's
// 151,936) is far wider than the byte tokenizer's. The prompts are token ids, so the tokenizer
// only decodes replies: one vocabulary entry at the model's last id makes every id decodable.
void EnsureTokenizer(const std::string& dir) {
  const std::string path = dir + "/tokenizer.json";
  if (std::filesystem::exists(path)) return;
  auto config = allot::models::LoadTransformerConfig(dir);
  if (!config.ok()) Fail("--model-dir: " + config.status().ToString());
  allot::models::ByteTokenizer tok;
  json root = json::parse(tok.ToHuggingFaceJson());
  if (config->vocab_size > tok.vocab_size()) {
    root["model"]["vocab"]["<|vocab_end|>"] = config->vocab_size - 1;
  }
  std::ofstream out(path);
  out << root.dump();
  if (!out) Fail("--model-dir: cannot write " + path);
  std::fprintf(stderr, "wrote the byte tokenizer (vocabulary %lld) to %s\n",
               static_cast<long long>(config->vocab_size), path.c_str());
}

std::vector<int> Prompt(int request, int prompt_len, int64_t vocab) {
  std::vector<int> prompt;
  if (prompt_len <= 0) {
    for (int t = 0; t < 24 + (request % 7); ++t) prompt.push_back((request * 31 + t * 7) % 256);
    return prompt;
  }
  std::mt19937_64 rng(static_cast<uint64_t>(request));
  std::uniform_int_distribution<int64_t> id(0, vocab - 1);
  for (int t = 0; t < prompt_len; ++t) prompt.push_back(static_cast<int>(id(rng)));
  return prompt;
}

struct RunResult {
  int64_t tokens = 0;
  double seconds = 0.0;
  int failures = 0;
  std::string first_error;
  double tokens_per_s() const { return seconds > 0 ? static_cast<double>(tokens) / seconds : 0; }
};

// `clients` threads share `requests` requests.
RunResult Run(int port, int clients, int requests, int max_tokens, const Options& o,
              int64_t vocab) {
  std::atomic<int> next{0};
  std::atomic<int64_t> tokens{0};
  std::atomic<int> failures{0};
  std::mutex error_mu;
  std::string first_error;
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&] {
      httplib::Client cli("127.0.0.1", port);
      cli.set_read_timeout(600);
      for (int i = next++; i < requests; i = next++) {
        json body = {{"prompt", Prompt(i, o.prompt_len, vocab)},
                     {"max_tokens", max_tokens},
                     {"temperature", o.temperature},
                     {"seed", i},
                     {"ignore_eos", true}};
        auto r = cli.Post("/v1/completions", body.dump(), "application/json");
        if (!r || r->status != 200) {
          ++failures;
          std::lock_guard lock(error_mu);
          if (first_error.empty()) {
            first_error = r ? "HTTP " + std::to_string(r->status) + ": " + r->body
                            : "no reply (" + httplib::to_string(r.error()) + ")";
          }
          continue;
        }
        tokens += json::parse(r->body)["usage"]["completion_tokens"].get<int64_t>();
      }
    });
  }
  for (auto& t : threads) t.join();
  RunResult out;
  out.seconds = Seconds(start);
  out.tokens = tokens;
  out.failures = failures;
  out.first_error = first_error;
  if (out.failures > 0) {
    std::fprintf(stderr, "%d requests failed; first: %s\n", out.failures, first_error.c_str());
  }
  return out;
}

std::vector<int> ParseList(const std::string& flag, const std::string& text) {
  std::vector<int> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const int v = std::atoi(item.c_str());
    if (v < 1) Fail(flag + ": expected positive integers separated by commas, got '" + text + "'");
    out.push_back(v);
  }
  if (out.empty()) Fail(flag + ": empty list");
  return out;
}

Options ParseOptions(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--deterministic") {
      o.deterministic = true;
      continue;
    }
    if (i + 1 >= argc) Fail(flag + ": missing value");
    const std::string value = argv[++i];
    if (flag == "--threads") {
      o.threads = std::atoi(value.c_str());
    } else if (flag == "--max-tokens") {
      o.max_tokens = std::atoi(value.c_str());
    } else if (flag == "--requests") {
      o.requests = std::atoi(value.c_str());
    } else if (flag == "--clients") {
      o.clients = ParseList(flag, value);
    } else if (flag == "--temperature") {
      o.temperature = std::atof(value.c_str());
    } else if (flag == "--prompt-len") {
      o.prompt_len = std::atoi(value.c_str());
    } else if (flag == "--device") {
      o.device = value;
    } else if (flag == "--dtype") {
      o.dtype = value;
    } else if (flag == "--cuda-graphs") {
      o.cuda_graphs = value;
    } else if (flag == "--model-dir") {
      o.model_dir = value;
    } else {
      Fail("unknown flag " + flag);
    }
  }
  if (o.max_tokens < 1) Fail("--max-tokens must be at least 1");
  if (o.requests < 1) Fail("--requests must be at least 1");
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  // Line by line even into a pipe: a run stopped by a time limit keeps the lines it printed.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const Options o = ParseOptions(argc, argv);
  allot::models::SetCpuThreads(o.threads);
  const bool own_model = o.model_dir.empty();
  const std::string dir = own_model ? WriteModel() : o.model_dir;
  if (!own_model) EnsureTokenizer(dir);
  const int most = *std::max_element(o.clients.begin(), o.clients.end());
  allot::llm::serve::ServeConfig config;
  config.model = dir;
  config.port = 0;
  config.device = o.device;
  config.dtype = o.dtype;
  config.cuda_graphs = o.cuda_graphs;
  config.deterministic = o.deterministic;
  // Every client's request decodes in the one batch, and each holds an HTTP thread meanwhile.
  config.max_batch = std::max(32, most);
  config.http_threads = std::max(config.http_threads, most + 8);
  const auto load_start = std::chrono::steady_clock::now();
  auto server = allot::llm::serve::Server::Create(config);
  if (!server.ok()) Fail(server.status().ToString());
  const double load_s = Seconds(load_start);
  auto port = (*server)->Start();
  if (!port.ok()) Fail(port.status().ToString());
  const int64_t vocab = (*server)->engine().model_config().vocab_size;
  Run(*port, 4, 8, 8, o, vocab);  // warm-up
  // On a GPU the largest batch also warms the caching allocator, so no measured run pays for
  // its first cudaMalloc of that size.
  if (o.device != "cpu") Run(*port, most, most, 8, o, vocab);

  std::printf(
      "allot serve decode throughput: %s %s, %d torch thread(s), max(%d, clients) requests x %d "
      "tokens, model loaded in %.1f s\n",
      o.device.c_str(), o.dtype.c_str(), o.threads, o.requests, o.max_tokens, load_s);
  const RunResult one_by_one = Run(*port, 1, std::min(o.requests, 8), o.max_tokens, o, vocab);
  const json common = {{"bench", "allot_serve"},     {"device", o.device},
                       {"dtype", o.dtype},           {"max_tokens", o.max_tokens},
                       {"prompt_len", o.prompt_len}, {"temperature", o.temperature},
                       {"threads", o.threads},       {"cuda_graphs", o.cuda_graphs},
                       {"deterministic", o.deterministic}};
  json base = common;
  base.update({{"clients", 1},
               {"one_at_a_time", true},
               {"tokens", one_by_one.tokens},
               {"seconds", one_by_one.seconds},
               {"tokens_per_s", one_by_one.tokens_per_s()},
               {"failures", one_by_one.failures},
               {"load_s", load_s}});
  std::printf("%s\n", base.dump().c_str());
  std::printf("%8s %12s %18s %8s %14s\n", "clients", "tok/s", "one-at-a-time tok/s", "ratio",
              "seqs/step");
  for (int clients : o.clients) {
    const int64_t steps_before = (*server)->metrics().batches();
    const int64_t tokens_before = (*server)->metrics().generation_tokens();
    const RunResult r = Run(*port, clients, std::max(o.requests, clients), o.max_tokens, o, vocab);
    const int64_t steps = (*server)->metrics().batches() - steps_before;
    const int64_t tokens = (*server)->metrics().generation_tokens() - tokens_before;
    // A decode step samples one token for each running sequence: tokens / steps is the mean
    // batch size.
    const double per_step =
        steps > 0 ? static_cast<double>(tokens) / static_cast<double>(steps) : 0.0;
    const double ratio =
        one_by_one.tokens_per_s() > 0 ? r.tokens_per_s() / one_by_one.tokens_per_s() : 0.0;
    std::printf("%8d %12.0f %18.0f %8.2f %14.1f\n", clients, r.tokens_per_s(),
                one_by_one.tokens_per_s(), ratio, per_step);
    json line = common;
    line.update({{"clients", clients},
                 {"requests", std::max(o.requests, clients)},
                 {"tokens", r.tokens},
                 {"seconds", r.seconds},
                 {"tokens_per_s", r.tokens_per_s()},
                 {"seqs_per_step", per_step},
                 {"decode_steps", steps},
                 {"failures", r.failures}});
    if (!r.first_error.empty()) line["first_error"] = r.first_error.substr(0, 500);
    std::printf("%s\n", line.dump().c_str());
  }
  (*server)->Stop();
  if (own_model) std::filesystem::remove_all(dir);
  return 0;
}
