// kilnd over HTTPS with a self-signed certificate made in the test (OpenSSL API).

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "tests/api/api_fixture.h"

namespace kiln::apitest {
namespace {

using testing::KilndProcess;
using testing::TestDatabase;

// Writes a self-signed certificate for 127.0.0.1/localhost and its key under `dir`.
void makeSelfSigned(const std::string& dir, const std::string& stem) {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  ASSERT_NE(key, nullptr);
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert), -60);
  X509_gmtime_adj(X509_getm_notAfter(cert), 24 * 3600);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("kiln test"), -1, -1,
                             0);
  X509_set_issuer_name(cert, name);
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  for (auto [nid, value] : {std::pair{NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost"},
                            std::pair{NID_basic_constraints, "critical,CA:TRUE"}}) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
    ASSERT_NE(ext, nullptr);
    X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
  }
  ASSERT_GT(X509_sign(cert, key, EVP_sha256()), 0);
  FILE* f = std::fopen((dir + "/" + stem + ".key").c_str(), "w");
  ASSERT_NE(f, nullptr);
  PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr);
  std::fclose(f);
  f = std::fopen((dir + "/" + stem + ".pem").c_str(), "w");
  ASSERT_NE(f, nullptr);
  PEM_write_X509(f, cert);
  std::fclose(f);
  X509_free(cert);
  EVP_PKEY_free(key);
}

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kiln-tls-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    makeSelfSigned(dir_, "server");
    makeSelfSigned(dir_, "other");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(TlsTest, ServesHttpsToClientsThatTrustItsCertificate) {
  TestDatabase db;
  KilndProcess kilnd({.database_url = db.url(),
                      .tls_cert = dir_ + "/server.pem",
                      .tls_key = dir_ + "/server.key",
                      .ca_file = dir_ + "/server.pem"});
  auto started = kilnd.start();
  ASSERT_TRUE(started.ok()) << started.error().message;
  ASSERT_EQ(kilnd.url().rfind("https://127.0.0.1:", 0), 0u) << kilnd.url();

  http::Client trusting({.base_url = kilnd.url(), .token = kilnd.adminToken(), .ca_file = dir_ + "/server.pem"});
  EXPECT_EQ(call(trusting, "GET", "/healthz").status, 200);
  Reply imported = call(trusting, "POST", "/api/v1/fleet/import", smallFleet(1).dump());
  EXPECT_EQ(imported.status, 201) << imported.body;
  EXPECT_EQ(call(trusting, "GET", "/api/v1/pods").doc()["items"].size(), 1u);

  // Without the CA (system trust only), or trusting another certificate: the handshake fails.
  http::Client system_trust({.base_url = kilnd.url(), .token = kilnd.adminToken()});
  auto refused = system_trust.request("GET", "/healthz");
  EXPECT_FALSE(refused.ok()) << "status " << refused->status;
  http::Client wrong_ca({.base_url = kilnd.url(), .ca_file = dir_ + "/other.pem"});
  EXPECT_FALSE(wrong_ca.request("GET", "/healthz").ok());

  // Plain HTTP to the HTTPS port gets no API answer.
  Reply plain = rawCall(kilnd.port(), "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                        std::chrono::milliseconds(3000));
  EXPECT_NE(plain.status, 200);
  EXPECT_TRUE(kilnd.running());
  EXPECT_EQ(call(trusting, "GET", "/healthz").status, 200);
  EXPECT_EQ(kilnd.stop(), 0);
}

TEST_F(TlsTest, RefusesToStartWithAKeyThatDoesNotMatch) {
  TestDatabase db;
  KilndProcess kilnd({.database_url = db.url(),
                      .tls_cert = dir_ + "/server.pem",
                      .tls_key = dir_ + "/other.key",
                      .ca_file = dir_ + "/server.pem",
                      .start_timeout = std::chrono::milliseconds(10000)});
  // Either kilnd exits, or it never completes a handshake: it must not serve.
  EXPECT_FALSE(kilnd.start().ok());
}

// Mutual TLS for agents (issue 31): certificates made by the openssl command in the test, a CA
// that signs the agents' client certificates (CN = the host), kilnd --agent-client-ca. An agent
// token, and a registration, count only over a connection whose verified certificate names the
// host; operators need none; a certificate from another CA ends the handshake.
class AgentMutualTlsTest : public TlsTest {
 protected:
  void openssl(const std::string& args) {
    const std::string cmd = "cd '" + dir_ + "' && openssl " + args + " >>openssl.log 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  // A certificate for `cn` signed by CA `ca` (ca.pem/ca.key), with DNS name `cn` too.
  void leaf(const std::string& stem, const std::string& cn, const std::string& ca) {
    openssl("req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout " + stem + ".key -subj '/CN=" + cn +
            "' -out " + stem + ".csr");
    std::ofstream(dir_ + "/" + stem + ".ext") << "subjectAltName=DNS:" << cn << "\nextendedKeyUsage=clientAuth\n";
    openssl("x509 -req -in " + stem + ".csr -CA " + ca + ".pem -CAkey " + ca + ".key -CAcreateserial -days 1 -extfile " +
            stem + ".ext -out " + stem + ".pem");
  }
  void ca(const std::string& stem) {
    openssl("req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout " + stem + ".key -subj '/CN=" + stem +
            "' -days 1 -out " + stem + ".pem");
  }
  std::unique_ptr<http::Client> agent(const KilndProcess& kilnd, const std::string& token, const std::string& cert) {
    http::ClientOptions o{.base_url = kilnd.url(), .token = token, .ca_file = dir_ + "/server.pem"};
    if (!cert.empty()) {
      o.client_cert_file = dir_ + "/" + cert + ".pem";
      o.client_key_file = dir_ + "/" + cert + ".key";
    }
    return std::make_unique<http::Client>(o);
  }
};

TEST_F(AgentMutualTlsTest, AnAgentCountsOnlyWithACertificateNamingItsHost) {
  ca("agents-ca");
  ca("rogue-ca");
  TestDatabase db;
  KilndProcess kilnd({.database_url = db.url(),
                      .extra_args = {"--agent-client-ca", dir_ + "/agents-ca.pem"},
                      .tls_cert = dir_ + "/server.pem",
                      .tls_key = dir_ + "/server.key",
                      .ca_file = dir_ + "/server.pem"});
  auto started = kilnd.start();
  ASSERT_TRUE(started.ok()) << started.error().message;
  http::Client admin({.base_url = kilnd.url(), .token = kilnd.adminToken(), .ca_file = dir_ + "/server.pem"});
  ASSERT_EQ(call(admin, "POST", "/api/v1/fleet/import", smallFleet(1).dump()).status, 201);
  std::vector<std::string> hosts;
  Reply listed = call(admin, "GET", "/api/v1/hosts?limit=3");
  const json page = listed.doc();
  for (const auto& h : page["items"]) hosts.push_back(h["id"].get<std::string>());
  ASSERT_EQ(hosts.size(), 3u) << listed.status << " " << listed.body;
  leaf("a", hosts[0], "agents-ca");
  leaf("b", hosts[1], "agents-ca");
  leaf("forged", hosts[0], "rogue-ca");
  const std::string enroll =
      call(admin, "POST", "/api/v1/tokens", R"({"role": "enroll", "name": "fleet"})").doc()["token"].get<std::string>();
  const std::string body = json{{"host", hosts[0]}, {"boot_id", "b"}, {"agent_version", "t"}}.dump();

  // Registration: only with host A's certificate.
  EXPECT_TRUE(isError(call(*agent(kilnd, enroll, ""), "POST", "/api/v1/agents/register", body), 403, "permission_denied"));
  EXPECT_TRUE(isError(call(*agent(kilnd, enroll, "b"), "POST", "/api/v1/agents/register", body), 403, "permission_denied"));
  EXPECT_FALSE(agent(kilnd, enroll, "forged")->request("POST", "/api/v1/agents/register", body).ok())
      << "a certificate from another CA ends the handshake";
  Reply registered = call(*agent(kilnd, enroll, "a"), "POST", "/api/v1/agents/register", body);
  ASSERT_EQ(registered.status, 200) << registered.body;
  const std::string token = registered.doc()["token"].get<std::string>();

  // Its token counts only with its certificate.
  const std::string poll = "/api/v1/agents/" + hosts[0] + "/work?wait=0";
  EXPECT_EQ(call(*agent(kilnd, token, "a"), "GET", poll).status, 204);
  EXPECT_TRUE(isError(call(*agent(kilnd, token, ""), "GET", poll), 403, "permission_denied"));
  Reply stolen = call(*agent(kilnd, token, "b"), "GET", poll);
  EXPECT_TRUE(isError(stolen, 403, "permission_denied")) << stolen.body;
  EXPECT_NE(stolen.doc()["error"]["message"].get<std::string>().find("client certificate naming that host"),
            std::string::npos);
  // Operators need no certificate.
  EXPECT_EQ(call(admin, "GET", "/api/v1/hosts/" + hosts[0]).status, 200);
  EXPECT_EQ(kilnd.stop(), 0);
}

TEST_F(TlsTest, AgentClientCertificatesNeedHttps) {
  TestDatabase db;
  KilndProcess kilnd({.database_url = db.url(),
                      .extra_args = {"--agent-client-ca", dir_ + "/server.pem"},
                      .start_timeout = std::chrono::milliseconds(10000)});
  EXPECT_FALSE(kilnd.start().ok());
}

}  // namespace
}  // namespace kiln::apitest
