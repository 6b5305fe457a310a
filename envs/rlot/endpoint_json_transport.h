// JSON POSTs to an endpoint's own routes (/pooling, /tokenize) for the PRM client
// (rewards::JsonTransport), over the LLM client's libcurl transport: the same base URL, bearer
// key and CA file as the endpoint's completions.
#pragma once

#include <memory>

#include "llm/endpoint_config.h"
#include "llm/http_transport.h"
#include "rewards/prm_reward.h"

namespace allot::envs::rlot {

// Errors name the URL: Unavailable for transport failures and non-2xx statuses (with the
// server's message), DataLoss for a body that is not JSON. `timeout_s` bounds each request.
rewards::JsonTransport EndpointJsonTransport(std::shared_ptr<llm::HttpTransport> http,
                                             llm::EndpointConfig endpoint,
                                             double timeout_s = 120.0);

}  // namespace allot::envs::rlot
