#include "rollout/security.h"

#include "core/atomic_file.h"

namespace allot::rollout {

bool IsLoopbackAddress(const std::string& host_port) {
  if (host_port.rfind("unix:", 0) == 0 || host_port.rfind("unix-abstract:", 0) == 0) return true;
  std::string host = host_port;
  if (!host.empty() && host.front() == '[') {
    const size_t close = host.find(']');
    host = close == std::string::npos ? host.substr(1) : host.substr(1, close - 1);
  } else {
    const size_t colon = host.rfind(':');
    // A bare IPv6 address has several colons and no brackets: treat it whole.
    if (colon != std::string::npos && host.find(':') == colon) host = host.substr(0, colon);
  }
  if (host == "localhost" || host == "::1") return true;
  if (host.rfind("127.", 0) == 0) {
    int dots = 0;
    for (char c : host) {
      if (c == '.') {
        ++dots;
      } else if (c < '0' || c > '9') {
        return false;
      }
    }
    return dots == 3;
  }
  return false;
}

Status CheckBindPolicy(const std::string& listen, const AuthConfig& auth) {
  if (listen.empty()) return InvalidArgument("rollout.worker.listen: empty");
  if (auth.tls() && (auth.tls_cert.empty() || auth.tls_key.empty())) {
    return InvalidArgument("rollout.worker.auth: tls_cert and tls_key must be set together");
  }
  if (IsLoopbackAddress(listen)) return Status::Ok();
  const bool server_tls = !auth.tls_cert.empty() && !auth.tls_key.empty();
  const bool mtls = server_tls && !auth.tls_ca.empty();
  if (auth.token.empty() && !mtls) {
    return PermissionDenied("rollout.worker.listen: refusing to bind non-loopback address '" +
                            listen +
                            "' without auth.token or mutual TLS (auth.tls_cert, tls_key, tls_ca)");
  }
  if (!server_tls && !auth.allow_insecure_transport) {
    return PermissionDenied(
        "rollout.worker.listen: refusing to bind non-loopback address '" + listen +
        "' with auth.token but no TLS: the bearer token would cross the network in plaintext, "
        "where anyone on the path can read it and impersonate the learner. Set auth.tls_cert and "
        "auth.tls_key (and auth.tls_ca on the dispatcher), or set "
        "auth.allow_insecure_transport: true if the network is trusted");
  }
  return Status::Ok();
}

grpc::Status CheckToken(const grpc::ServerContext& ctx, const std::string& token) {
  if (token.empty()) return grpc::Status::OK;
  const auto& md = ctx.client_metadata();
  auto it = md.find(kAuthMetadataKey);
  if (it == md.end()) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "missing authorization metadata");
  }
  const std::string presented(it->second.data(), it->second.size());
  if (!ConstantTimeEquals(presented, "Bearer " + token)) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "invalid token");
  }
  return grpc::Status::OK;
}

void AttachToken(grpc::ClientContext& ctx, const std::string& token) {
  if (!token.empty()) ctx.AddMetadata(kAuthMetadataKey, "Bearer " + token);
}

Result<std::string> ReadPemFile(const std::string& path, const char* field) {
  std::string pem;
  if (Status s = ReadFile(path, &pem); !s.ok()) {
    return Status(s.code(), std::string(field) + ": cannot open '" + path + "'");
  }
  if (pem.empty()) return InvalidArgument(std::string(field) + ": '" + path + "' is empty");
  return pem;
}

Result<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(const AuthConfig& auth) {
  if (!auth.tls()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions opts(
      auth.tls_ca.empty() ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                          : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  ALLOT_ASSIGN_OR_RETURN(pair.cert_chain, ReadPemFile(auth.tls_cert, "auth.tls_cert"));
  ALLOT_ASSIGN_OR_RETURN(pair.private_key, ReadPemFile(auth.tls_key, "auth.tls_key"));
  opts.pem_key_cert_pairs.push_back(std::move(pair));
  if (!auth.tls_ca.empty()) {
    ALLOT_ASSIGN_OR_RETURN(opts.pem_root_certs, ReadPemFile(auth.tls_ca, "auth.tls_ca"));
  }
  return grpc::SslServerCredentials(opts);
}

Result<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(const AuthConfig& auth) {
  if (!auth.tls()) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions opts;
  if (!auth.tls_ca.empty()) {
    ALLOT_ASSIGN_OR_RETURN(opts.pem_root_certs, ReadPemFile(auth.tls_ca, "auth.tls_ca"));
  }
  if (!auth.tls_cert.empty()) {
    ALLOT_ASSIGN_OR_RETURN(opts.pem_cert_chain, ReadPemFile(auth.tls_cert, "auth.tls_cert"));
    ALLOT_ASSIGN_OR_RETURN(opts.pem_private_key, ReadPemFile(auth.tls_key, "auth.tls_key"));
  }
  return grpc::SslCredentials(opts);
}

}  // namespace allot::rollout
