#include "llm/endpoint_config.h"

namespace allot::llm {

Status EndpointConfig::Validate() const {
  if (name.empty()) return InvalidArgument("endpoints: an endpoint has no name");
  const std::string where = "endpoints['" + name + "']";
  if (base_url.rfind("http://", 0) != 0 && base_url.rfind("https://", 0) != 0) {
    return InvalidArgument(where + ".base_url: '" + base_url +
                           "' is not an http:// or https:// URL");
  }
  if (model.empty()) return InvalidArgument(where + ".model: empty (the served model name)");
  if (group != "SLM" && group != "MLM" && group != "LLM") {
    return InvalidArgument(where + ".group: '" + group + "' is not one of SLM, MLM, LLM");
  }
  if (limits.max_concurrency < 1) return InvalidArgument(where + ".limits.max_concurrency: < 1");
  if (limits.max_attempts < 1) return InvalidArgument(where + ".limits.max_attempts: < 1");
  if (api_key.find_first_of("\r\n") != std::string::npos) {
    return InvalidArgument(where + ".api_key: contains a line break");
  }
  return Status::Ok();
}

}  // namespace allot::llm
