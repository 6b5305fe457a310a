// Config section `serve`: the OpenAI-compatible server for one local model plus LoRA adapters.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config/schema.h"
#include "models/tokenizer/chat_template.h"

namespace allot::llm::serve {

struct ServeConfig {
  std::string model;  // Hugging Face directory: config.json, *.safetensors, tokenizer.json
  std::vector<std::string> adapters;  // "NAME=DIR" PEFT adapters loaded at start
  std::string served_model_name;      // empty = the model directory's name
  std::string host = "127.0.0.1";
  int port = 8000;  // 0 = any free port
  std::string dtype = "auto";
  std::string device = "cpu";
  int threads = 0;         // CPU threads for LibTorch and the BLAS; 0 = their defaults
  int max_batch = 32;      // sequences decoded together in one batch
  int batch_wait_ms = 2;   // how long the scheduler waits for more requests to join a batch
  int max_waiting = 1024;  // queued requests beyond this get 503
  int http_threads = 64;   // connections served at once
  int64_t max_body_bytes = 4 << 20;
  // CUDA graphs of the decode step (models/decode_graph.h): "auto" = on for a CUDA device in a
  // CUDA build, "true" (an error elsewhere), "false".
  std::string cuda_graphs = "auto";
  // Batch-invariant decoding (models::DecodeBatch::set_batch_invariant): a seeded request's
  // tokens and log-probs do not depend on what else is decoded with it, at the cost of one
  // forward pass per sequence and step. For RL runs that must be a function of their seed.
  bool deterministic = false;
  int default_max_tokens = 16;  // completions (OpenAI's default); chat runs to the context end
  std::string api_key;          // empty = no authentication
  models::ChatTemplateConfig chat_template;

  void Describe(config::Visitor& v) {
    v.Field("model", model, {.doc = "Hugging Face model directory"});
    v.Field("adapters", adapters, {.doc = "PEFT adapters loaded at start, as NAME=DIR"});
    v.Field("served_model_name", served_model_name,
            {.doc = "model id clients send (default: the model directory's name)"});
    v.Field("host", host, {.doc = "address to bind (127.0.0.1 keeps it local)"});
    v.Field("port", port, {.doc = "TCP port; 0 picks a free one", .min = 0, .max = 65535});
    v.Field("dtype", dtype,
            {.doc = "weight dtype", .choices = {"auto", "float32", "bfloat16", "float16"}});
    v.Field("device", device, {.doc = "torch device (cpu, cuda, cuda:1)"});
    v.Field("threads", threads,
            {.doc = "CPU threads for LibTorch and the BLAS (0 = one per core)", .min = 0});
    v.Field("max_batch", max_batch, {.doc = "sequences decoded together", .min = 1});
    v.Field("batch_wait_ms", batch_wait_ms,
            {.doc = "how long a batch waits for more requests before it starts", .min = 0});
    v.Field("cuda_graphs", cuda_graphs,
            {.doc = "replay the decode step as a CUDA graph (auto: on for CUDA devices)",
             .choices = {"auto", "true", "false"}});
    v.Field("deterministic", deterministic,
            {.doc = "batch-invariant decoding: a seeded request samples the same tokens and "
                    "log-probs whatever else is in the batch (one forward pass per sequence)"});
    v.Field("max_waiting", max_waiting, {.doc = "queued requests before 503", .min = 1});
    v.Field("http_threads", http_threads, {.doc = "concurrent HTTP connections", .min = 1});
    v.Field("max_body_bytes", max_body_bytes, {.doc = "request body limit (413)", .min = 1});
    v.Field("default_max_tokens", default_max_tokens,
            {.doc = "completions max_tokens when a request sets none (chat: up to the context)",
             .min = 1});
    v.Field("api_key", api_key, {.doc = "Bearer token clients must send", .secret = true});
    v.Field("chat_template", chat_template, {.doc = "chat template of /v1/chat/completions"});
  }
};

}  // namespace allot::llm::serve
