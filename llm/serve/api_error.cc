#include "llm/serve/api_error.h"

#include <nlohmann/json.hpp>

namespace allot::llm::serve {

std::string ApiError::Body() const {
  nlohmann::json e = {{"message", message}, {"type", type}};
  e["param"] = param.empty() ? nlohmann::json() : nlohmann::json(param);
  e["code"] = code.empty() ? nlohmann::json() : nlohmann::json(code);
  return nlohmann::json{{"error", e}}.dump(-1, ' ', false,
                                           nlohmann::json::error_handler_t::replace);
}

ApiError BadRequest(std::string message, std::string param) {
  ApiError e;
  e.status = 400;
  e.message = std::move(message);
  e.param = std::move(param);
  return e;
}

ApiError FromStatus(const Status& status) {
  ApiError e;
  e.message = status.message();
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
    case StatusCode::kAlreadyExists:
      e.status = 400;
      break;
    case StatusCode::kNotFound:
      e.status = 404;
      e.type = "not_found_error";
      break;
    case StatusCode::kResourceExhausted:
    case StatusCode::kUnavailable:
      e.status = 503;
      e.type = "server_overloaded";
      break;
    case StatusCode::kDeadlineExceeded:
      e.status = 504;
      e.type = "timeout";
      break;
    default:
      e.status = 500;
      e.type = "internal_server_error";
      break;
  }
  return e;
}

}  // namespace allot::llm::serve
