// Config sections of the rollout layer: the worker, the learner-side dispatcher and their
// shared transport security settings.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config/schema.h"

namespace allot::rollout {

// Transport security. A worker that binds a non-loopback address refuses to start unless
// callers are authenticated (a token or mutual TLS) over an encrypted transport (TLS), or
// allow_insecure_transport says a plaintext token is acceptable. The dispatcher uses the same
// section as a client.
struct AuthConfig {
  // Shared secret sent as `authorization: Bearer <token>` metadata and compared in constant
  // time. Prefer `${ALLOT_ROLLOUT_TOKEN}` in YAML so that it stays out of files.
  std::string token;
  // Mutual TLS: PEM paths. On the worker, cert/key are its server identity and ca verifies the
  // learner's client certificate; on the dispatcher, cert/key are its client identity and ca
  // verifies the worker.
  std::string tls_cert;
  std::string tls_key;
  std::string tls_ca;
  // Client side only: the name to verify in the worker's certificate (empty: the host dialled).
  std::string tls_server_name;
  // A token without TLS crosses the network in plaintext: anyone on the path can read it and
  // impersonate the learner. A worker refuses that on a non-loopback address unless this is set
  // (e.g. inside a trusted private network or a service mesh that encrypts for you).
  bool allow_insecure_transport = false;

  bool tls() const { return !tls_cert.empty() || !tls_key.empty() || !tls_ca.empty(); }

  void Describe(config::Visitor& v) {
    v.Field("token", token,
            {.doc = "shared secret for the authorization metadata", .secret = true});
    v.Field("tls_cert", tls_cert, {.doc = "PEM certificate chain (server or client identity)"});
    v.Field("tls_key", tls_key, {.doc = "PEM private key matching tls_cert"});
    v.Field("tls_ca", tls_ca, {.doc = "PEM CA bundle verifying the peer (mutual TLS)"});
    v.Field("tls_server_name", tls_server_name,
            {.doc = "dispatcher only: expected name in the worker's certificate"});
    v.Field("allow_insecure_transport", allow_insecure_transport,
            {.doc = "allow a token without TLS on a non-loopback address (token in plaintext)"});
  }
};

// `allot rollout-worker`.
struct WorkerConfig {
  std::string listen = "127.0.0.1:50051";
  std::string worker_id;  // empty: host:pid
  int capacity = 64;
  int threads = 8;
  int64_t max_message_bytes = 4 << 20;
  int64_t chunk_bytes = 1 << 20;
  int64_t max_trajectory_bytes = 256 << 20;
  int64_t max_policy_bytes = 1LL << 30;
  int64_t max_unacked_bytes = 16 << 20;
  double drain_timeout_s = 30.0;
  std::string metrics_listen = "127.0.0.1:9464";
  std::string port_file;
  bool keep_freed_memory = true;
  AuthConfig auth;

  void Describe(config::Visitor& v) {
    v.Field("listen", listen,
            {.doc = "gRPC address host:port (port 0 picks a free one); non-loopback needs auth"});
    v.Field("worker_id", worker_id, {.doc = "name reported to the learner (default host:pid)"});
    v.Field("capacity", capacity,
            {.doc = "episodes held at once, from acceptance to the learner's ack",
             .min = 1,
             .max = 1 << 20});
    v.Field("threads", threads, {.doc = "episode threads", .min = 1, .max = 4096});
    v.Field("max_message_bytes", max_message_bytes,
            {.doc = "largest gRPC message received", .min = 64 << 10, .max = 64 << 20});
    v.Field(
        "chunk_bytes", chunk_bytes,
        {.doc = "trajectories larger than this travel in parts", .min = 4 << 10, .max = 32 << 20});
    v.Field("max_trajectory_bytes", max_trajectory_bytes,
            {.doc = "largest serialized trajectory an env may return",
             .min = 1 << 10,
             .max = 4.0 * (1LL << 30)});
    v.Field("max_policy_bytes", max_policy_bytes,
            {.doc = "largest policy update accepted", .min = 1 << 10, .max = 16.0 * (1LL << 30)});
    v.Field("max_unacked_bytes", max_unacked_bytes,
            {.doc = "no episode starts while finished, unacknowledged trajectories hold more "
                    "serialized bytes than this (backpressure in bytes; capacity counts episodes)",
             .min = 1 << 20,
             .max = 64.0 * (1LL << 30)});
    v.Field("drain_timeout_s", drain_timeout_s,
            {.doc = "on SIGTERM/Drain: time to finish in-flight episodes before returning them",
             .min = 0.0,
             .max = 3600.0});
    v.Field("metrics_listen", metrics_listen,
            {.doc = "HTTP address for /metrics (Prometheus text); empty disables"});
    v.Field("port_file", port_file,
            {.doc = "write the bound gRPC address here once serving (for launchers)"});
    v.Field("keep_freed_memory", keep_freed_memory,
            {.doc = "allot rollout-worker: keep freed heap memory for reuse instead of "
                    "returning it to the kernel and use one malloc arena (process-wide glibc "
                    "settings, applied at process start; avoid page faults while streaming)"});
    v.Field("auth", auth);
  }
};

// The learner side.
struct DispatcherConfig {
  std::vector<std::string> workers;
  int heartbeat_interval_ms = 500;
  int missed_heartbeats = 3;
  int reconnect_initial_ms = 100;
  int reconnect_max_ms = 5000;
  int max_attempts = 8;
  int64_t max_buffered = 1 << 16;
  int64_t max_message_bytes = 4 << 20;
  int64_t chunk_bytes = 1 << 20;
  int64_t max_trajectory_bytes = 256 << 20;
  int64_t remember_closed = 1 << 16;
  std::string learner_id = "learner";
  bool keep_freed_memory = true;
  AuthConfig auth;

  void Describe(config::Visitor& v) {
    v.Field("workers", workers, {.doc = "rollout worker addresses host:port"});
    v.Field("heartbeat_interval_ms", heartbeat_interval_ms,
            {.doc = "heartbeat period per worker", .min = 10, .max = 60000});
    v.Field("missed_heartbeats", missed_heartbeats,
            {.doc = "consecutive misses before a worker is declared dead", .min = 1, .max = 100});
    v.Field("reconnect_initial_ms", reconnect_initial_ms,
            {.doc = "first reconnect delay (doubles up to reconnect_max_ms, with jitter)",
             .min = 1,
             .max = 60000});
    v.Field("reconnect_max_ms", reconnect_max_ms, {.min = 1, .max = 600000});
    v.Field("max_attempts", max_attempts,
            {.doc = "dispatches per episode before it is closed as failed", .min = 1, .max = 1000});
    v.Field(
        "max_buffered", max_buffered,
        {.doc = "episodes in flight plus finished-not-consumed before dispatch pauses", .min = 1});
    v.Field("max_message_bytes", max_message_bytes, {.min = 64 << 10, .max = 64 << 20});
    v.Field(
        "chunk_bytes", chunk_bytes,
        {.doc = "policy updates travel in chunks of this size", .min = 4 << 10, .max = 32 << 20});
    v.Field("max_trajectory_bytes", max_trajectory_bytes,
            {.min = 1 << 10, .max = 4.0 * (1LL << 30)});
    v.Field("remember_closed", remember_closed,
            {.doc = "ids of this many recently closed episodes are kept to count duplicates and "
                    "refuse resubmission; older ones are forgotten (bounded memory)",
             .min = 0,
             .max = 1 << 26});
    v.Field("learner_id", learner_id, {.doc = "name sent to workers in Hello"});
    v.Field("keep_freed_memory", keep_freed_memory,
            {.doc = "learner process: keep freed heap memory for reuse instead of returning it "
                    "to the kernel (process-wide glibc setting, applied at process start; malloc "
                    "arenas are left to glibc for LibTorch's threads)"});
    v.Field("auth", auth);
  }
};

// Everything of the rollout layer a recipe sets: `rollout:` in the top-level config.
struct RolloutConfig {
  // Workers started inside the learner process (same protocol, in-process channel).
  int in_process_workers = 0;
  WorkerConfig worker;
  DispatcherConfig dispatcher;

  void Describe(config::Visitor& v) {
    v.Field("in_process_workers", in_process_workers,
            {.doc = "workers run inside the learner (single-machine runs)", .min = 0, .max = 1024});
    v.Field("worker", worker);
    v.Field("dispatcher", dispatcher);
  }
};

}  // namespace allot::rollout
