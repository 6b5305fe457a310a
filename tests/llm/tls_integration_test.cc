// The LLM client over https: a loopback TLS server whose certificate a throwaway CA signed (made
// with the openssl CLI). With the CA in `ca_file` the call succeeds; without it, or with a
// foreign CA, verification fails and the error names the URL. Verification is never skipped.
#include <gtest/gtest.h>
#include <httplib.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "llm/client.h"
#include "tests/llm/scripted_server.h"

namespace allot::llm {
namespace {

namespace fs = std::filesystem;

class TlsCerts {
 public:
  TlsCerts() {
    dir_ = (fs::temp_directory_path() / ("allot-llm-tls-" + std::to_string(::getpid()))).string();
    fs::create_directories(dir_);
  }
  ~TlsCerts() { fs::remove_all(dir_); }

  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

  // A CA, and a server certificate for 127.0.0.1 signed by it.
  bool Make() {
    const std::string key = " -newkey rsa:2048 -nodes";
    return Sh("openssl req -x509" + key + " -days 2 -subj /CN=allot-llm-test-ca -keyout " +
              Path("ca.key") + " -out " + Path("ca.pem")) &&
           Sh("openssl req -x509" + key + " -days 2 -subj /CN=allot-llm-other-ca -keyout " +
              Path("other.key") + " -out " + Path("other.pem")) &&
           Sh("openssl req -new" + key + " -subj /CN=127.0.0.1 -keyout " + Path("server.key") +
              " -out " + Path("server.csr")) &&
           Sh("printf 'subjectAltName=IP:127.0.0.1' > " + Path("san.ext")) &&
           Sh("openssl x509 -req -days 2 -in " + Path("server.csr") + " -CA " + Path("ca.pem") +
              " -CAkey " + Path("ca.key") + " -CAcreateserial -extfile " + Path("san.ext") +
              " -out " + Path("server.pem"));
  }

 private:
  bool Sh(const std::string& cmd) const {
    return std::system((cmd + " >>'" + dir_ + "/openssl.log' 2>&1").c_str()) == 0;
  }
  std::string dir_;
};

TEST(ClientTlsIntegrationTest, VerifiesTheServerAgainstCaFile) {
  if (std::system("openssl version >/dev/null 2>&1") != 0) GTEST_SKIP() << "no openssl CLI";
  TlsCerts certs;
  ASSERT_TRUE(certs.Make()) << "openssl failed; see its log";
  httplib::SSLServer server(certs.Path("server.pem").c_str(), certs.Path("server.key").c_str());
  ASSERT_TRUE(server.is_valid());
  server.Post("/v1/completions", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(testing::CompletionBody("secure", {5, 6}, 3), "application/json");
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread serving([&] { server.listen_after_bind(); });  // the bound socket queues early calls

  auto call = [&](const std::string& ca_file) {
    EndpointConfig e;
    e.name = "tls";
    e.base_url = "https://127.0.0.1:" + std::to_string(port) + "/v1";
    e.model = "m";
    e.ca_file = ca_file;
    e.limits.max_attempts = 1;
    e.limits.timeout_s = 5;
    auto client = Client::Create({e});
    EXPECT_TRUE(client.ok()) << client.status().ToString();
    CompletionRequest r;
    r.prompt = "hi";
    return (*client)->Complete("tls", r).get();
  };

  auto ok = call(certs.Path("ca.pem"));
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->choices.at(0).text, "secure");

  auto foreign = call(certs.Path("other.pem"));
  ASSERT_FALSE(foreign.ok());
  EXPECT_NE(foreign.status().message().find("https://127.0.0.1:" + std::to_string(port)),
            std::string::npos)
      << foreign.status().ToString();

  auto system_store = call("");  // the test CA is in no system store
  EXPECT_FALSE(system_store.ok());

  auto missing = call(certs.Path("nowhere.pem"));
  EXPECT_FALSE(missing.ok());

  server.stop();
  serving.join();
}

}  // namespace
}  // namespace allot::llm
