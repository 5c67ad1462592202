// Issue 31, mutual TLS end to end: a real kilnd serving HTTPS with --agent-client-ca and real
// kiln-agent processes presenting client certificates made by the openssl command. The agent
// whose certificate names its host enrols and runs a step; an agent holding another host's
// certificate is refused at registration and never acts for that host.

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "tests/e2e/e2e_support.h"

namespace kiln::e2e {
namespace {

namespace fs = std::filesystem;

class MutualTlsE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kiln-e2e-mtls-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    openssl("req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout server.key -subj /CN=kilnd"
            " -addext subjectAltName=IP:127.0.0.1 -days 1 -out server.pem");
    openssl("req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -subj /CN=agents -days 1"
            " -out ca.pem");
  }
  void TearDown() override {
    agents_.reset();
    kilnd_.reset();
    if (!HasFailure()) fs::remove_all(dir_);
  }
  void openssl(const std::string& args) {
    const std::string cmd = "cd '" + dir_ + "' && openssl " + args + " >>openssl.log 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  // A client certificate for `host`, signed by the agents' CA.
  void clientCert(const std::string& stem, const std::string& host) {
    openssl("req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout " + stem + ".key -subj /CN=" + host +
            " -out " + stem + ".csr");
    openssl("x509 -req -in " + stem + ".csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 -out " + stem + ".pem");
  }

  std::string dir_;
  std::unique_ptr<testing::TestDatabase> db_;
  std::unique_ptr<testing::KilndProcess> kilnd_;
  std::unique_ptr<AgentFleet> agents_;
};

TEST_F(MutualTlsE2eTest, OnlyTheAgentWithItsHostsCertificateEnrolsAndWorks) {
  db_ = std::make_unique<testing::TestDatabase>();
  kilnd_ = std::make_unique<testing::KilndProcess>(testing::KilndOptions{
      .database_url = db_->url(),
      .extra_args = {"--workflows-dir", KILN_WORKFLOWS_DIR, "--agent-client-ca", dir_ + "/ca.pem"},
      .tls_cert = dir_ + "/server.pem",
      .tls_key = dir_ + "/server.key",
      .ca_file = dir_ + "/server.pem"});
  ASSERT_TRUE(kilnd_->start().ok()) << kilnd_->logTail();
  http::Client admin({.base_url = kilnd_->url(), .token = kilnd_->adminToken(), .ca_file = dir_ + "/server.pem"});
  auto imported = admin.request("POST", "/api/v1/fleet/import", fleetYaml(1, "available"), "application/yaml");
  ASSERT_TRUE(imported.ok() && imported->status == 201) << (imported.ok() ? imported->body : imported.error().message);
  const std::string a = "e2e-b01-p01-h01", b = "e2e-b01-p01-h02";
  clientCert("a", a);
  auto token = admin.request("POST", "/api/v1/tokens", R"({"role": "enroll", "name": "fleet"})");
  ASSERT_TRUE(token.ok() && token->status == 201);
  const std::string enroll = dir_ + "/enroll-token";
  std::ofstream(enroll) << json::parse(token->body)["token"].get<std::string>() << "\n";

  agents_ = std::make_unique<AgentFleet>(dir_ + "/agents", kilnd_->url(), enroll, 0.001);
  agents_->extra_args = {"--ca-file", dir_ + "/server.pem", "--client-cert", dir_ + "/a.pem", "--client-key",
                         dir_ + "/a.key"};
  agents_->start(a);
  agents_->start(b);  // holds host a's certificate: refused

  auto hostSeen = [&](const std::string& h) {
    auto r = admin.request("GET", "/api/v1/hosts/" + h);
    return r.ok() && r->status == 200 && json::parse(r->body).value("last_seen", json()).is_string();
  };
  ASSERT_TRUE(waitUntil([&] { return hostSeen(a); }, 30s)) << agents_->logTail(a);
  auto run = admin.request("POST", "/api/v1/workflow-runs",
                           json{{"workflow", "pre-job-health"}, {"hosts", {a}}}.dump());
  ASSERT_TRUE(run.ok() && run->status == 201) << (run.ok() ? run->body : run.error().message);
  const std::string id = json::parse(run->body)["id"].get<std::string>();
  json view;
  ASSERT_TRUE(waitUntil(
      [&] {
        auto r = admin.request("GET", "/api/v1/workflow-runs/" + id);
        if (!r.ok() || r->status != 200) return false;
        view = json::parse(r->body);
        return view.value("state", "") != "running";
      },
      120s));
  EXPECT_EQ(view.value("state", ""), "passed") << view.dump(1);

  EXPECT_FALSE(hostSeen(b)) << "an agent with another host's certificate never registers";
  EXPECT_TRUE(waitUntil(
      [&] { return agents_->logTail(b, 50).find("client certificate naming that host") != std::string::npos; }, 20s))
      << agents_->logTail(b);
  EXPECT_EQ(db_->query("SELECT count(*) FROM tokens WHERE role = 'agent' AND host_id = '" + b + "'"), "0");
}

}  // namespace
}  // namespace kiln::e2e
