// Issue 14 end to end: kilnd on a PostgreSQL primary with a synchronous streaming standby
// (Debian's PostgreSQL 15, deploy/lib/pg-pair.sh), one multi-host URL with
// target_session_attrs=read-write. The primary dies mid-rollout, the standby is promoted, and
// kilnd carries on by itself: the rollout completes, nothing committed is lost, no pod is
// upgraded twice.

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "tests/e2e/e2e_support.h"
#include "tests/e2e/vfleet.h"

namespace kiln::e2e {
namespace {

const std::string kPair = KILN_DEPLOY_DIR "/lib/pg-pair.sh";
const std::map<std::string, std::string> kEnv = {{"PATH", "/usr/bin:/bin:/usr/sbin:/sbin"}};

class FailoverTest : public BuildingRolloutTest {
 protected:
  void SetUp() override {
    E2eTest::SetUp();  // a kilnd on the shared test server, replaced below
    if (HasFatalFailure()) return;
    char tmpl[] = "/tmp/kiln-pgpair-XXXXXX";  // its own: PostgreSQL runs as "kiln", not root
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    pair_dir_ = tmpl;
    ::chmod(pair_dir_.c_str(), 0755);
    const int base = 47000 + static_cast<int>(::getpid() % 500) * 2;
    auto r = runCommand({kPair, "start", pair_dir_, std::to_string(base), std::to_string(base + 1)}, kEnv, 120s);
    ASSERT_EQ(r.status, 0) << r.output;
    const std::string url = r.output.substr(r.output.rfind("host="), r.output.find_last_not_of("\n") - r.output.rfind("host=") + 1);
    testing::KilndOptions o;
    o.database_url = url;
    o.extra_args = {"--workflows-dir", KILN_WORKFLOWS_DIR};
    kilnd_ = std::make_unique<testing::KilndProcess>(o);
    ASSERT_TRUE(kilnd_->start().ok()) << kilnd_->logTail();
    http::ClientOptions c;
    c.base_url = kilnd_->url();
    c.token = kilnd_->adminToken();
    c.timeout = 15s;
    api_ = std::make_unique<http::Client>(c);
  }
  void TearDown() override {
    if (HasFailure())
      for (const char* log : {"/primary.log", "/standby.log"})
        std::cerr << "---- " << log << ":\n" << tailLines(readFile(pair_dir_ + log), 15) << "\n";
    BuildingRolloutTest::TearDown();
    runCommand({kPair, "stop", pair_dir_}, kEnv, 60s);
    if (!pair_dir_.empty()) std::filesystem::remove_all(pair_dir_);
  }
  std::string pair_dir_;
};

TEST_F(FailoverTest, AStandbyPromotedMidRolloutTakesOverAndTheRolloutCompletesWithNothingLost) {
  const std::string id = startBuildingRollout(kilnd_->url(), 4);
  ASSERT_TRUE(waitForAPodIn(id, "upgrading", 60s));

  // What kilnd had committed when the primary died: every rollout event so far.
  const json before = call("GET", "/api/v1/rollouts/" + id + "/events");
  ASSERT_FALSE(before["items"].empty());
  auto stopped = runCommand({kPair, "stop-primary", pair_dir_, "immediate"}, kEnv, 30s);
  ASSERT_EQ(stopped.status, 0) << stopped.output;
  // Meanwhile kilnd says so instead of hanging.
  std::this_thread::sleep_for(2s);
  auto health = api_->request("GET", "/healthz");
  ASSERT_TRUE(health.ok()) << "kilnd hung with its primary gone";
  EXPECT_EQ(health->status, 503) << health->body;
  auto promoted = runCommand({kPair, "promote", pair_dir_}, kEnv, 60s);
  ASSERT_EQ(promoted.status, 0) << promoted.output;
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(waitUntil([&] {
    auto h = api_->request("GET", "/healthz");
    return h.ok() && h->status == 200;
  }, 30s)) << "kilnd did not reconnect to the promoted standby";
  std::printf("kilnd healthy on the promoted standby %.0f ms after the promotion\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() * 1000);

  expectCompletedOnceWithinTheLimit(id, 4);
  // Nothing committed before the failover is missing after it.
  const json after = call("GET", "/api/v1/rollouts/" + id + "/events");
  std::set<std::int64_t> ids;
  for (const auto& e : after["items"]) ids.insert(e.value("id", std::int64_t{0}));
  for (const auto& e : before["items"]) EXPECT_TRUE(ids.count(e.value("id", std::int64_t{0}))) << "lost: " << e.dump();
  json h = call("GET", "/healthz");
  EXPECT_EQ(h.value("status", ""), "ok");
}

}  // namespace
}  // namespace kiln::e2e
