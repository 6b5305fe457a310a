// Status and Result: how expected failures travel in allot.
//
// Network errors, bad configs, bad data and endpoint errors come back as a
// Status (or a Result<T> holding either a value or a Status) whose message
// names the file and line, the field, or the URL. Exceptions are reserved for
// programmer errors and for torch's own.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace allot {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,   // the caller's input is malformed (config, request, file)
  kNotFound,          // a file, key, endpoint or checkpoint does not exist
  kAlreadyExists,     // e.g. a run directory that exists and is not resumed
  kOutOfRange,        // a value or offset lies outside its allowed range
  kDataLoss,          // a file is truncated or fails its checksum
  kUnavailable,       // transient: connection refused, 503, breaker open
  kDeadlineExceeded,  // a deadline passed before completion
  kResourceExhausted, // 429, size limits, queue full
  kPermissionDenied,  // auth failure
  kUnimplemented,     // an engine that has not landed yet
  kCancelled,         // the operation was stopped by its owner
  kInternal,          // a bug or an unexpected library failure
};

const char* StatusCodeName(StatusCode code);

// A cheap value type: an OK status carries no allocation.
class Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "INVALID_ARGUMENT: configs/x.yaml:3: unknown key ..."
  std::string ToString() const;

  // Prefixes the message with context ("loading run foo: ...") and keeps the code.
  Status Annotate(const std::string& context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status AlreadyExists(std::string m) { return {StatusCode::kAlreadyExists, std::move(m)}; }
inline Status OutOfRange(std::string m) { return {StatusCode::kOutOfRange, std::move(m)}; }
inline Status DataLoss(std::string m) { return {StatusCode::kDataLoss, std::move(m)}; }
inline Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status DeadlineExceeded(std::string m) { return {StatusCode::kDeadlineExceeded, std::move(m)}; }
inline Status ResourceExhausted(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }
inline Status PermissionDenied(std::string m) { return {StatusCode::kPermissionDenied, std::move(m)}; }
inline Status Unimplemented(std::string m) { return {StatusCode::kUnimplemented, std::move(m)}; }
inline Status Cancelled(std::string m) { return {StatusCode::kCancelled, std::move(m)}; }
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

// Either a T or a non-OK Status.
template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    assert(!std::get<Status>(v_).ok() && "Result constructed from an OK status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  Status status() const { return ok() ? Status() : std::get<Status>(v_); }

  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }

  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace allot

// Returns early from the enclosing function when `expr` is not OK.
#define ALLOT_RETURN_IF_ERROR(expr)        \
  do {                                     \
    ::allot::Status allot_status_ = (expr); \
    if (!allot_status_.ok()) return allot_status_; \
  } while (0)

#define ALLOT_CONCAT_INNER_(a, b) a##b
#define ALLOT_CONCAT_(a, b) ALLOT_CONCAT_INNER_(a, b)

// ALLOT_ASSIGN_OR_RETURN(auto x, MakeX()); declares x or returns the error.
#define ALLOT_ASSIGN_OR_RETURN(lhs, expr) \
  ALLOT_ASSIGN_OR_RETURN_IMPL_(ALLOT_CONCAT_(allot_result_, __LINE__), lhs, expr)
#define ALLOT_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()
