// Issue 14 end to end: three kilnd replicas on one database behind a real HAProxy (Debian's,
// with the shipped deploy/haproxy/kiln.cfg), a virtual fleet and every API call going through
// the balancer; the replica that runs the controllers is SIGKILLed mid-rollout.

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "tests/e2e/e2e_support.h"
#include "tests/e2e/vfleet.h"

namespace kiln::e2e {
namespace {

// A loopback port nobody listens on now.
int freePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// The shipped config with its address, certificate, syslog, servers and connection limits made
// local: every other line (timeouts, health checks, balance, retries) is what production runs.
std::string haproxyConfig(int port, const std::vector<int>& kilnd_ports) {
  std::string text = readFile(KILN_DEPLOY_DIR "/haproxy/kiln.cfg");
  std::istringstream in(text);
  std::string out, line;
  bool servers_written = false;
  while (std::getline(in, line)) {
    const auto first = line.find_first_not_of(' ');
    const std::string body = first == std::string::npos ? "" : line.substr(first);
    if (body.rfind("log ", 0) == 0 || body == "option httplog") continue;
    if (body.rfind("bind ", 0) == 0) {
      out += "    bind 127.0.0.1:" + std::to_string(port) + "\n";
      continue;
    }
    if (body.rfind("http-request set-header X-Forwarded-Proto", 0) == 0) continue;
    // The production connection limits need a descriptor limit this machine does not give.
    line = std::regex_replace(line, std::regex("maxconn [0-9]+"), "maxconn 4000");
    if (body.rfind("server ", 0) == 0) {
      if (!servers_written)
        for (std::size_t i = 0; i < kilnd_ports.size(); ++i)
          out += "    server kilnd" + std::to_string(i + 1) + " 127.0.0.1:" + std::to_string(kilnd_ports[i]) + " check\n";
      servers_written = true;
      continue;
    }
    out += line + "\n";
  }
  return out;
}

int portOf(const std::string& url) { return std::stoi(url.substr(url.rfind(':') + 1)); }

class ReplicasTest : public E2eTest {
 protected:
  void TearDown() override {
    if (HasFailure()) {
      if (fleet_) std::cerr << "---- kiln-vfleet log tail:\n" << fleet_->logTail() << "\n";
      std::cerr << "---- haproxy log:\n" << tailLines(readFile(dir_ + "/haproxy.log"), 30) << "\n";
    }
    sampler_.reset();
    fleet_.reset();
    haproxy_.reset();
    E2eTest::TearDown();
    replicas_.clear();
  }

  std::unique_ptr<Child> haproxy_;
  std::unique_ptr<VirtualFleet> fleet_;
  std::unique_ptr<InFlightSampler> sampler_;
  std::vector<std::unique_ptr<testing::KilndProcess>> replicas_;  // besides kilnd_
};

TEST_F(ReplicasTest, ThreeReplicasBehindHaproxyFinishARolloutWhenTheLeaderIsKilledMidway) {
  for (int i = 0; i < 2; ++i) {
    replicas_.push_back(newKilnd());
    ASSERT_TRUE(replicas_.back()->start().ok()) << replicas_.back()->logTail();
  }
  std::vector<testing::KilndProcess*> all = {kilnd_.get(), replicas_[0].get(), replicas_[1].get()};
  std::vector<int> ports;
  for (auto* k : all) ports.push_back(portOf(k->url()));
  const int port = freePort();
  {
    std::ofstream cfg(dir_ + "/haproxy.cfg");
    cfg << haproxyConfig(port, ports);
  }
  haproxy_ = std::make_unique<Child>(std::vector<std::string>{"/usr/sbin/haproxy", "-db", "-f", dir_ + "/haproxy.cfg"},
                                     std::map<std::string, std::string>{{"PATH", "/usr/bin:/bin"}}, dir_ + "/haproxy.log");
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  // From here on every call of the test goes through the balancer.
  http::ClientOptions o;
  o.base_url = url;
  o.token = kilnd_->adminToken();
  o.timeout = 15s;
  api_ = std::make_unique<http::Client>(o);
  ASSERT_TRUE(waitUntil([&] { return tryGet("/api/v1/whoami").has_value(); }, 15s))
      << tailLines(readFile(dir_ + "/haproxy.log"), 20);

  importFleet(fleetYaml(4, "available"));
  fleet_ = std::make_unique<VirtualFleet>(KILN_VFLEET_BIN, dir_ + "/vfleet", url, enrollTokenFile(), kilnd_->adminTokenFile(),
                                          0.002, std::vector<std::string>{});
  json b = call("POST", "/api/v1/bundles", bundleDoc("1.0", "GB200-P4975_0004_250301.1.0", "28.43.3010", "575.57.08"), 201);
  json policy = {{"canary_pods", 0}, {"waves", {"100%"}}, {"soak", "0s"}, {"max_concurrent_pods", 2},
                 {"capacity_floor", {{"max_percent_down", 100}}}, {"failure_budget", {{"pods", 0}}}};
  json r = call("POST", "/api/v1/rollouts",
                {{"bundle", b.value("id", "")}, {"selector", {{"buildings", {"e2e-b01"}}}}, {"policy", policy}, {"start", true}},
                201);
  const std::string id = r.value("id", "");
  watchRollout(id);
  sampler_ = std::make_unique<InFlightSampler>(url, kilnd_->adminToken(), id);

  // Mid-rollout: a pod is upgrading. Kill the replica that runs the controllers.
  ASSERT_TRUE(waitUntil([&] {
    auto pods = tryGet("/api/v1/rollouts/" + id + "/pods");
    if (!pods) return false;
    for (const auto& p : (*pods)["items"])
      if (p.value("phase", "") == "upgrading") return true;
    return false;
  }, 60s));
  int leader = -1;
  for (std::size_t i = 0; i < all.size(); ++i) {
    http::ClientOptions direct;
    direct.base_url = all[i]->url();
    direct.token = kilnd_->adminToken();
    direct.timeout = 5s;
    auto m = http::Client(direct).request("GET", "/metrics");
    if (m.ok() && m->body.find("\nkiln_leader 1") != std::string::npos) leader = static_cast<int>(i);
  }
  ASSERT_GE(leader, 0) << "no replica says it leads";
  all[leader]->kill();
  std::cerr << "killed replica " << leader + 1 << " (the leader) mid-rollout\n";

  json done = waitRollout(id, {"completed", "halted", "aborted"}, 180s);
  sampler_->stop();
  EXPECT_EQ(done.value("state", ""), "completed") << done.dump();
  EXPECT_EQ(done["counts"].value("succeeded", 0), 4);
  // No limit crossed and no pod upgraded twice across the takeover.
  EXPECT_LE(sampler_->max(), 2) << "max_concurrent_pods crossed: " << sampler_->worst();
  EXPECT_GT(sampler_->samples(), 10);
  const json pods = call("GET", "/api/v1/rollouts/" + id + "/pods");
  for (const auto& p : pods["items"]) {
    EXPECT_EQ(p.value("phase", ""), "succeeded") << p.dump();
    EXPECT_EQ(p.value("attempt", 0), 1) << p.dump();
  }
  json runs = call("GET", "/api/v1/workflow-runs?workflow=firmware-upgrade&limit=100");
  EXPECT_EQ(runs["items"].size(), 4u) << "one upgrade run per pod: " << runs.dump();
  // The survivors still answer through the balancer.
  EXPECT_EQ(call("GET", "/api/v1/pods")["items"].size(), 4u);
}

}  // namespace
}  // namespace kiln::e2e
