// Issue 14 end to end: three kilnd replicas on one database behind a real HAProxy (Debian's,
// with the shipped deploy/haproxy/kiln.cfg), a virtual fleet and every API call going through
// the balancer; the replica that runs the controllers is SIGKILLed mid-rollout.

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/e2e/e2e_support.h"
#include "tests/e2e/vfleet.h"
#include "tests/support/haproxy.h"
#include "tests/support/kilnd_process.h"

namespace kiln::e2e {
namespace {

int portOf(const std::string& url) { return std::stoi(url.substr(url.rfind(':') + 1)); }

class ReplicasTest : public BuildingRolloutTest {
 protected:
  void TearDown() override {
    if (HasFailure()) std::cerr << "---- haproxy log:\n" << tailLines(readFile(dir_ + "/haproxy.log"), 30) << "\n";
    BuildingRolloutTest::TearDown();
    haproxy_.reset();
    replicas_.clear();
  }

  std::unique_ptr<Child> haproxy_;
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
  const int port = testing::freeLoopbackPort();
  {
    std::ofstream cfg(dir_ + "/haproxy.cfg");
    cfg << testing::localHaproxyConfig(readFile(KILN_DEPLOY_DIR "/haproxy/kiln.cfg"), port, ports);
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

  const std::string id = startBuildingRollout(url, 4);
  // Mid-rollout: a pod is upgrading. Kill the replica that runs the controllers.
  ASSERT_TRUE(waitForAPodIn(id, "upgrading", 60s));
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

  expectCompletedOnceWithinTheLimit(id, 4);
  // The survivors still answer through the balancer.
  EXPECT_EQ(call("GET", "/api/v1/pods")["items"].size(), 4u);
}

}  // namespace
}  // namespace kiln::e2e
