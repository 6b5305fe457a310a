#include "llm/endpoint_config.h"

#include <cctype>
#include <cstdlib>

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
  if (api != "completions" && api != "chat") {
    return InvalidArgument(where + ".api: '" + api + "' is not one of completions, chat");
  }
  return Status::Ok();
}

std::optional<std::string> GetProcessEnv(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

Status ResolveApiKey(EndpointConfig& e, const GetEnvFn& getenv) {
  const std::string where = "endpoints['" + e.name + "']";
  constexpr const char* kRedacted = "<redacted>";
  if (!e.api_key_env.empty()) {
    for (char c : e.api_key_env) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') {
        return InvalidArgument(where + ".api_key_env: '" + e.api_key_env +
                               "' is not an environment variable name");
      }
    }
    if (!e.api_key.empty() && e.api_key != kRedacted) {
      return InvalidArgument(where + ": set api_key or api_key_env, not both");
    }
    std::optional<std::string> key = getenv(e.api_key_env);
    if (!key) {
      return NotFound(where + ".api_key_env: " + e.api_key_env +
                      " is not set in this process's environment");
    }
    e.api_key = std::move(*key);
    return Status::Ok();
  }
  if (e.api_key != kRedacted) return Status::Ok();
  std::string own = "ALLOT_API_KEY_";
  for (char c : e.name) {
    own += std::isalnum(static_cast<unsigned char>(c))
               ? static_cast<char>(std::toupper(static_cast<unsigned char>(c)))
               : '_';
  }
  std::optional<std::string> key = getenv(own);
  if (!key) key = getenv("OPENAI_API_KEY");
  e.api_key = key.value_or("");
  return Status::Ok();
}

}  // namespace allot::llm
