// OpenAI-style API errors: {"error": {"message", "type", "param", "code"}} with an HTTP status.
#pragma once

#include <string>

#include "core/status.h"

namespace allot::llm::serve {

struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // the request field at fault, empty = null
  std::string code;   // empty = null

  // The response body.
  std::string Body() const;
};

ApiError BadRequest(std::string message, std::string param = "");

// Maps a Status to an error: InvalidArgument/OutOfRange/AlreadyExists 400, NotFound 404,
// ResourceExhausted/Unavailable 503, DeadlineExceeded 504, anything else 500.
ApiError FromStatus(const Status& status);

}  // namespace allot::llm::serve
