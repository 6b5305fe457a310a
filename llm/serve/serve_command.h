// `allot serve`: loads the model, binds, prints the URL and serves until SIGINT or SIGTERM.
#pragma once

#include <functional>
#include <string>

#include "core/status.h"
#include "llm/serve/serve_config.h"

namespace allot::llm::serve {

// Blocks SIGINT/SIGTERM in the calling thread (and so in every thread started later), serves,
// and returns once a signal asked it to stop and the server drained. `ready` (optional) is
// called with the base URL when the server accepts connections.
Status RunServe(const ServeConfig& config,
                const std::function<void(const std::string& url)>& ready = nullptr);

}  // namespace allot::llm::serve
