// JSON POSTs to an endpoint's own routes (/pooling, /classify, /tokenize: a PRM's), over the LLM
// client's libcurl transport: the same base URL, bearer key and CA file as the endpoint's
// completions.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"
#include "llm/accounting.h"
#include "llm/endpoint_config.h"
#include "llm/http_transport.h"

namespace allot::llm {

// POSTs `body` to `path` below the endpoint's server root and returns the reply's JSON. The
// same function type as rewards::JsonTransport (the PRM client's), which takes it as it is.
using JsonTransport =
    std::function<Result<nlohmann::json>(const std::string& path, const nlohmann::json& body)>;

// Receives one accounted call (the episode's Account()); runs on the calling thread.
using CallRecorder = std::function<void(const CallRecord&)>;

// Errors name the URL: Unavailable for transport failures and non-2xx statuses (with the
// server's message), DataLoss for a body that is not JSON. `timeout_s` bounds each request.
// With `record`, every POST but to `tokenize_path` (which runs no model) is accounted: one
// call, the reply's usage.prompt_tokens and completion_tokens, its latency, and the
// endpoint's $ and energy price under `gpu`; failed calls count as failed.
// The base URL's trailing "/" and "/v1" are dropped: routes hang off the server root.
JsonTransport EndpointJsonTransport(std::shared_ptr<HttpTransport> http, EndpointConfig endpoint,
                                    double timeout_s = 120.0, CallRecorder record = nullptr,
                                    GpuProfile gpu = {}, std::string tokenize_path = "/tokenize");

}  // namespace allot::llm
