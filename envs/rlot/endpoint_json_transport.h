// JSON POSTs to an endpoint's own routes (/pooling, /tokenize) for the PRM client
// (rewards::JsonTransport), over the LLM client's libcurl transport: the same base URL, bearer
// key and CA file as the endpoint's completions.
#pragma once

#include <functional>
#include <memory>

#include "llm/accounting.h"
#include "llm/endpoint_config.h"
#include "llm/http_transport.h"
#include "rewards/prm_reward.h"

namespace allot::envs::rlot {

// Receives one accounted call (the episode's Account()); runs on the calling thread.
using CallRecorder = std::function<void(const llm::CallRecord&)>;

// Errors name the URL: Unavailable for transport failures and non-2xx statuses (with the
// server's message), DataLoss for a body that is not JSON. `timeout_s` bounds each request.
// With `record`, every scoring POST (not /tokenize, which runs no model) is accounted: one
// call, the reply's usage.prompt_tokens and completion_tokens, its latency, and the
// endpoint's $ and energy price under `gpu`; failed calls count as failed.
rewards::JsonTransport EndpointJsonTransport(std::shared_ptr<llm::HttpTransport> http,
                                             llm::EndpointConfig endpoint, double timeout_s = 120.0,
                                             CallRecorder record = nullptr,
                                             llm::GpuProfile gpu = {},
                                             std::string tokenize_path = "/tokenize");

}  // namespace allot::envs::rlot
