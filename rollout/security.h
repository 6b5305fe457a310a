// Transport security for the rollout service: bind policy, shared-secret tokens and TLS.
//
// Policy: a worker binds 127.0.0.1 by default. Any non-loopback address needs a token or mutual
// TLS, and a token needs TLS too (or an explicit allow_insecure_transport), else the worker
// refuses to start. Tokens travel as `authorization: Bearer <token>`
// metadata and are compared in constant time. Nothing here logs a secret.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "core/constant_time.h"
#include "core/status.h"
#include "rollout/config.h"

namespace allot::rollout {

inline constexpr char kAuthMetadataKey[] = "authorization";

// True for 127.0.0.0/8, ::1, localhost and unix sockets.
bool IsLoopbackAddress(const std::string& host_port);

// Refuses a non-loopback bind without a token or mutual TLS (cert, key and ca all set), and a
// token without TLS (plaintext) unless auth.allow_insecure_transport.
Status CheckBindPolicy(const std::string& listen, const AuthConfig& auth);

// Server side: UNAUTHENTICATED unless the call carries the configured token (OK when no token
// is configured).
grpc::Status CheckToken(const grpc::ServerContext& ctx, const std::string& token);

// Client side: adds the token metadata when one is configured.
void AttachToken(grpc::ClientContext& ctx, const std::string& token);

Result<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(const AuthConfig& auth);
Result<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(const AuthConfig& auth);

// Reads a whole file; the error names the path and the config field.
Result<std::string> ReadPemFile(const std::string& path, const char* field);

}  // namespace allot::rollout
