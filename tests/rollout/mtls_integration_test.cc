// Mutual TLS with real certificates: a throwaway CA, a worker certificate and client
// certificates are made with the openssl CLI in a temporary directory, and the worker serves on
// loopback with mutual TLS. A client whose certificate the CA signed runs episodes; a client
// without a certificate, one whose certificate another CA signed, and one that does not trust
// the worker's CA are turned away; a token configured alongside mutual TLS is still enforced.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "rollout/dispatcher.h"
#include "rollout/security.h"
#include "rollout/worker.h"
#include "tests/rollout/echo_env.h"
#include "tests/rollout/rollout_test_util.h"

namespace allot::rollout {
namespace {

using namespace std::chrono_literals;
using testing::Collect;
using testing::EchoRequests;

constexpr char kServerName[] = "worker.allot.test";
constexpr char kToken[] = "mtls-and-token-0123456789";

// Runs a shell command; true when it exits 0. Output goes to `log` for failure messages.
bool Sh(const std::string& cmd, const std::string& log) {
  const int rc = std::system((cmd + " >>'" + log + "' 2>&1").c_str());
  return rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A directory of PEM files: ca{,2}.pem, server.{pem,key}, client.{pem,key} (signed by ca) and
// rogue.{pem,key} (signed by ca2). EC P-256 keys keep generation fast.
class Pki {
 public:
  bool Make() {
    char tmpl[] = "/tmp/allot_mtls_XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return false;
    dir_ = tmpl;
    log_ = dir_ + "/openssl.log";
    const std::string key = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    auto ca = [&](const std::string& name) {
      return Sh("openssl req -x509 " + key + " -days 2 -subj /CN=allot-test-" + name + " -keyout " +
                    P(name + ".key") + " -out " + P(name + ".pem"),
                log_);
    };
    auto leaf = [&](const std::string& name, const std::string& ca_name, const std::string& cn,
                    const std::string& ext) {
      std::ofstream(P(name + ".ext")) << ext << "\n";
      return Sh("openssl req -new " + key + " -subj /CN=" + cn + " -keyout " + P(name + ".key") +
                    " -out " + P(name + ".csr"),
                log_) &&
             Sh("openssl x509 -req -days 2 -in " + P(name + ".csr") + " -CA " +
                    P(ca_name + ".pem") + " -CAkey " + P(ca_name + ".key") +
                    " -CAcreateserial -extfile " + P(name + ".ext") + " -out " + P(name + ".pem"),
                log_);
    };
    return ca("ca") && ca("ca2") &&
           leaf("server", "ca", kServerName,
                std::string("subjectAltName=DNS:") + kServerName +
                    "\nextendedKeyUsage=serverAuth") &&
           leaf("client", "ca", "learner", "extendedKeyUsage=clientAuth") &&
           leaf("rogue", "ca2", "learner", "extendedKeyUsage=clientAuth");
  }
  ~Pki() {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  std::string P(const std::string& file) const { return dir_ + "/" + file; }
  std::string log() const { return ReadAll(log_); }

 private:
  std::string dir_;
  std::string log_;
};

class MtlsIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(Sh("openssl version", "/dev/null")) << "the openssl CLI is needed for this test";
    ASSERT_TRUE(pki_.Make()) << pki_.log();
    testing::RegisterEchoEnv(registry_);
  }
  void TearDown() override {
    if (worker_) worker_->Shutdown();
  }

  void StartWorker(const std::string& token = "") {
    WorkerConfig wc;
    wc.listen = "127.0.0.1:0";
    wc.metrics_listen = "";
    wc.auth.tls_cert = pki_.P("server.pem");
    wc.auth.tls_key = pki_.P("server.key");
    wc.auth.tls_ca = pki_.P("ca.pem");
    wc.auth.token = token;
    auto w = WorkerServer::Start(wc, &registry_);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    worker_ = std::move(w).value();
  }

  // Client auth: `cert` names a PEM pair in the PKI ("" for none), `ca` the root it trusts.
  AuthConfig ClientAuth(const std::string& cert, const std::string& ca = "ca") const {
    AuthConfig a;
    a.tls_ca = pki_.P(ca + ".pem");
    if (!cert.empty()) {
      a.tls_cert = pki_.P(cert + ".pem");
      a.tls_key = pki_.P(cert + ".key");
    }
    a.tls_server_name = kServerName;
    return a;
  }

  // One Hello over a fresh channel with `auth`.
  grpc::Status Hello(const AuthConfig& auth) {
    auto creds = MakeChannelCredentials(auth);
    EXPECT_TRUE(creds.ok()) << creds.status().ToString();
    grpc::ChannelArguments args;
    args.SetSslTargetNameOverride(auth.tls_server_name);
    auto channel = grpc::CreateCustomChannel(worker_->address(), *creds, args);
    auto stub = v1::RolloutWorker::NewStub(channel);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 5s);
    AttachToken(ctx, auth.token);
    v1::HelloRequest req;
    req.set_protocol_version(v1::PROTOCOL_VERSION_1);
    v1::HelloReply reply;
    return stub->Hello(&ctx, req, &reply);
  }

  // Runs `n` echo episodes through a dispatcher with `auth`; returns how many finished cleanly.
  size_t RunEpisodes(const AuthConfig& auth, int n) {
    DispatcherConfig dc;
    dc.workers = {worker_->address()};
    dc.auth = auth;
    dc.reconnect_initial_ms = 20;
    auto d = Dispatcher::Create(dc);
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    if (!d.ok()) return 0;
    size_t ok = 0;
    if ((*d)->WaitForWorkers(1, 5s)) {
      EXPECT_TRUE((*d)->Submit(EchoRequests("mtls-", n, "{tokens: 4}")).ok());
      for (const auto& f : Collect(**d, static_cast<size_t>(n), 10s)) {
        if (f.trajectory.failure().reason() == v1::FAILURE_REASON_NONE) ++ok;
      }
    }
    (*d)->Shutdown();
    return ok;
  }

  Pki pki_;
  EnvRegistry registry_;
  std::unique_ptr<WorkerServer> worker_;
};

TEST_F(MtlsIntegrationTest, ClientSignedByTheCaRunsEpisodes) {
  StartWorker();
  EXPECT_TRUE(Hello(ClientAuth("client")).ok());
  EXPECT_EQ(RunEpisodes(ClientAuth("client"), 5), 5u);
}

TEST_F(MtlsIntegrationTest, ClientWithoutCertificateIsRejected) {
  StartWorker();
  const grpc::Status s = Hello(ClientAuth(""));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
}

TEST_F(MtlsIntegrationTest, ClientSignedByAnotherCaIsRejected) {
  StartWorker();
  const grpc::Status s = Hello(ClientAuth("rogue"));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
  // The dispatcher never gets a session either.
  DispatcherConfig dc;
  dc.workers = {worker_->address()};
  dc.auth = ClientAuth("rogue");
  dc.reconnect_initial_ms = 20;
  auto d = Dispatcher::Create(dc);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE((*d)->WaitForWorkers(1, 500ms));
  (*d)->Shutdown();
}

TEST_F(MtlsIntegrationTest, ClientThatDoesNotTrustTheWorkerRefusesIt) {
  StartWorker();
  // A valid client certificate, but the worker's chain is checked against the other CA.
  const grpc::Status s = Hello(ClientAuth("client", "ca2"));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
}

TEST_F(MtlsIntegrationTest, PlaintextClientIsRejected) {
  StartWorker();
  auto stub = v1::RolloutWorker::NewStub(
      grpc::CreateChannel(worker_->address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 5s);
  v1::HelloRequest req;
  req.set_protocol_version(v1::PROTOCOL_VERSION_1);
  v1::HelloReply reply;
  EXPECT_EQ(stub->Hello(&ctx, req, &reply).error_code(), grpc::StatusCode::UNAVAILABLE);
}

TEST_F(MtlsIntegrationTest, TokenIsStillCheckedOverMutualTls) {
  StartWorker(kToken);
  AuthConfig auth = ClientAuth("client");
  EXPECT_EQ(Hello(auth).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  auth.token = "mtls-and-token-0123456788";
  EXPECT_EQ(Hello(auth).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  auth.token = kToken;
  EXPECT_TRUE(Hello(auth).ok());
  EXPECT_EQ(RunEpisodes(auth, 3), 3u);
}

TEST_F(MtlsIntegrationTest, NonLoopbackBindIsAllowedWithMutualTlsOnly) {
  AuthConfig auth;
  auth.tls_cert = pki_.P("server.pem");
  auth.tls_key = pki_.P("server.key");
  EXPECT_FALSE(CheckBindPolicy("0.0.0.0:0", auth).ok());  // server TLS alone is not mutual
  auth.tls_ca = pki_.P("ca.pem");
  EXPECT_TRUE(CheckBindPolicy("0.0.0.0:0", auth).ok());
  // Unreadable PEM paths fail the start with the field named, not a crash.
  WorkerConfig wc;
  wc.listen = "127.0.0.1:0";
  wc.metrics_listen = "";
  wc.auth = auth;
  wc.auth.tls_key = pki_.P("missing.key");
  auto w = WorkerServer::Start(wc, &registry_);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("auth.tls_key"), std::string::npos) << w.status().ToString();
}

}  // namespace
}  // namespace allot::rollout
