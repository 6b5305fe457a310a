// Config sections for the LLM endpoint pool: one EndpointConfig per named endpoint, and the GPU
// profile used to turn tokens into an energy estimate.
//
// The lead's top-level config holds `std::vector<allot::llm::EndpointConfig> endpoints;` and one
// `allot::llm::GpuProfile gpu;`. A request names an endpoint by `name`.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "core/config/schema.h"
#include "core/status.h"

namespace allot::llm {

// Per-endpoint limits and robustness knobs.
struct EndpointLimits {
  int max_concurrency = 256;    // requests on the wire at once; more wait in a queue
  double requests_per_s = 0.0;  // token-bucket rate; 0 = unlimited
  double burst = 0.0;           // bucket size; 0 = max(1, requests_per_s)
  double timeout_s = 120.0;     // one attempt, connect to last byte
  double connect_timeout_s = 10.0;
  double deadline_s = 600.0;  // whole call including retries, unless the request sets one
  int max_attempts = 4;       // first try plus retries
  double backoff_initial_s = 0.2;
  double backoff_max_s = 10.0;
  double max_retry_after_s = 60.0;  // a longer Retry-After gives up instead of waiting
  int breaker_failures = 5;         // consecutive transport/5xx failures that open the circuit
  double breaker_cooldown_s = 5.0;  // open time before /health is probed
  int64_t max_response_bytes = 64ll << 20;

  void Describe(config::Visitor& v) {
    v.Field("max_concurrency", max_concurrency, {.doc = "requests in flight at once", .min = 1});
    v.Field("requests_per_s", requests_per_s,
            {.doc = "token-bucket rate, 0 = unlimited", .min = 0.0});
    v.Field("burst", burst, {.doc = "token-bucket size, 0 = max(1, requests_per_s)", .min = 0.0});
    v.Field("timeout_s", timeout_s, {.doc = "per-attempt timeout", .min = 0.001});
    v.Field("connect_timeout_s", connect_timeout_s,
            {.doc = "TCP/TLS connect timeout", .min = 0.001});
    v.Field("deadline_s", deadline_s, {.doc = "whole-call deadline incl. retries", .min = 0.001});
    v.Field("max_attempts", max_attempts, {.doc = "first try plus retries", .min = 1});
    v.Field("backoff_initial_s", backoff_initial_s, {.doc = "first retry backoff", .min = 0.0});
    v.Field("backoff_max_s", backoff_max_s, {.doc = "backoff cap", .min = 0.0});
    v.Field("max_retry_after_s", max_retry_after_s,
            {.doc = "longest Retry-After honoured before giving up", .min = 0.0});
    v.Field("breaker_failures", breaker_failures,
            {.doc = "consecutive failures that open the circuit breaker", .min = 1});
    v.Field("breaker_cooldown_s", breaker_cooldown_s,
            {.doc = "seconds open before /health is probed", .min = 0.0});
    v.Field("max_response_bytes", max_response_bytes, {.doc = "response size limit", .min = 1024});
  }
};

// One OpenAI-compatible endpoint (vLLM, `allot serve`, or a hosted API).
struct EndpointConfig {
  std::string name;      // logical name requests use
  std::string base_url;  // "http://127.0.0.1:8000" (with or without /v1)
  std::string model;     // served model name sent as "model"
  std::string api_key;   // usually empty: see api_key_env; empty = no auth header
  // The environment variable holding the bearer token. Every process that builds a Client
  // (learner, rollout worker, `allot eval`) reads it from its own environment, so the key never
  // travels in a recipe, an env_config or a log; only the variable's name does.
  std::string api_key_env;
  std::string api = "completions";  // completions: /v1/completions; chat: /v1/chat/completions
  std::string ca_file;              // PEM CAs for an https endpoint; empty = the system store
  double params_b = 0.0;            // parameters, billions
  double active_params_b = 0.0;     // active parameters for MoE; 0 = params_b
  std::string group = "SLM";        // R2-Reasoner capability group
  double usd_per_m_input = 0.0;     // $ per 1M prompt tokens
  double usd_per_m_output = 0.0;    // $ per 1M completion tokens
  EndpointLimits limits;

  // Parameters that do the work per token: the active ones for MoE (R2-Reasoner Sec. 5.1).
  double EffectiveParams() const {
    return (active_params_b > 0 ? active_params_b : params_b) * 1e9;
  }

  void Describe(config::Visitor& v) {
    v.Field("name", name, {.doc = "logical endpoint name used by requests"});
    v.Field("base_url", base_url, {.doc = "OpenAI-compatible base URL, e.g. http://host:8000"});
    v.Field("model", model, {.doc = "served model name"});
    v.Field("api_key", api_key,
            {.doc = "bearer token (prefer api_key_env: a key never travels to workers)",
             .secret = true});
    v.Field("api_key_env", api_key_env,
            {.doc = "environment variable with the bearer token, read by every process that "
                    "calls the endpoint (learner and rollout workers)"});
    v.Field("api", api,
            {.doc = "text calls go to /v1/completions (raw prompt) or /v1/chat/completions "
                    "(the prompt as one user message; the server applies its chat template)",
             .choices = {"completions", "chat"}});
    v.Field("ca_file", ca_file,
            {.doc = "PEM file of CAs that sign an https endpoint (default: the system store)"});
    v.Field("params_b", params_b, {.doc = "model parameters (billions)", .min = 0.0});
    v.Field("active_params_b", active_params_b,
            {.doc = "active parameters for MoE (billions), 0 = params_b", .min = 0.0});
    v.Field("group", group,
            {.doc = "R2-Reasoner capability group", .choices = {"SLM", "MLM", "LLM"}});
    v.Field("usd_per_m_input", usd_per_m_input, {.doc = "$ per 1M input tokens", .min = 0.0});
    v.Field("usd_per_m_output", usd_per_m_output, {.doc = "$ per 1M output tokens", .min = 0.0});
    v.Field("limits", limits);
  }

  // Checks what the schema cannot: a name, an http(s) URL. Messages name the endpoint.
  Status Validate() const;
};

// Reads an environment variable; nullopt when unset. Injectable for tests.
using GetEnvFn = std::function<std::optional<std::string>(const std::string& name)>;
std::optional<std::string> GetProcessEnv(const std::string& name);

// Puts the endpoint's bearer token into `api_key`, in the process that will call it:
//  - api_key_env set: the key is that variable's value; NotFound names the endpoint and the
//    variable (never a value) when it is unset. Setting api_key as well is an error.
//  - api_key "<redacted>" (a config that went through redaction, e.g. an older env_config):
//    ALLOT_API_KEY_<NAME> (the endpoint name upper-cased, non-alphanumerics as '_'), else
//    OPENAI_API_KEY, else no key.
// Client::Create calls it for every endpoint.
Status ResolveApiKey(EndpointConfig& endpoint, const GetEnvFn& getenv = GetProcessEnv);

// The GPU every model is assumed to run on, for energy = FLOPs x (TDP / peak FLOP/s).
// R2-Reasoner Sec. 5.1 assumes NVIDIA A100 SXM: 400 W TDP, 312 TFLOP/s dense BF16.
struct GpuProfile {
  std::string name = "A100-SXM";
  double tdp_watts = 400.0;
  double peak_flops = 312e12;

  double JoulesPerFlop() const { return peak_flops > 0 ? tdp_watts / peak_flops : 0.0; }

  void Describe(config::Visitor& v) {
    v.Field("name", name, {.doc = "GPU the energy estimate assumes"});
    v.Field("tdp_watts", tdp_watts, {.doc = "thermal design power (W)", .min = 0.0});
    v.Field("peak_flops", peak_flops, {.doc = "peak dense FLOP/s", .min = 1.0});
  }
};

}  // namespace allot::llm
