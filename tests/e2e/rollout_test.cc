// Issue 4 end to end: firmware rollouts over a simulated fleet of 8 NVL72 pods (144 hosts in
// one kiln-vfleet process speaking the real agent protocol) driven by a real kilnd: a clean
// rollout under its concurrency limit, the failure budget halting it, rollback, kilnd killed
// at random points, and a second replica taking the controller over.

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <random>
#include <thread>

#include "tests/e2e/e2e_support.h"
#include "tests/e2e/vfleet.h"

namespace kiln::e2e {
namespace {

constexpr int kPods = 8;
constexpr const char* kHmcV1 = "GB200-P4975_0004_250301.1.0";
constexpr const char* kHmcV2 = "GB200-P4975_0004_250601.1.0";

std::string podName(int i) {
  char name[32];
  std::snprintf(name, sizeof name, "e2e-b01-p%02d", i);
  return name;
}

class RolloutTest : public E2eTest {
 protected:
  void SetUp() override {
    E2eTest::SetUp();
    if (HasFatalFailure()) return;
    importFleet(fleetYaml(kPods, "available"));
    for (int i = 1; i <= kPods; ++i) {
      pods_.push_back(podName(i));
      hosts_[podName(i)] = podHosts(podName(i));
      ASSERT_EQ(hosts_[podName(i)].size(), 18u);
    }
    enroll_file_ = enrollTokenFile();
    // The shipped firmware-upgrade retries a failed flash after 1 min: a new version of the
    // workflow with second-long backoffs keeps the failure tests short.
    json wf = call("GET", "/api/v1/workflows/firmware-upgrade");
    std::string yaml = wf.value("yaml", "");
    for (const std::string from : {"backoff: 1m", "backoff: 30s", "backoff: 20s", "backoff: 10s"})
      for (auto pos = yaml.find(from); pos != std::string::npos; pos = yaml.find(from))
        yaml.replace(pos, from.size(), "backoff: 1s");
    auto put = api_->request("PUT", "/api/v1/workflows/firmware-upgrade", yaml, "application/yaml");
    ASSERT_TRUE(put.ok());
    ASSERT_EQ(put->status, 200) << put->body;
  }

  void TearDown() override {
    if (HasFailure() && fleet_) std::cerr << "---- kiln-vfleet log tail:\n" << fleet_->logTail() << "\n";
    fleet_.reset();
    E2eTest::TearDown();
    second_.reset();
  }

  void startFleet(const std::string& url, const std::vector<std::string>& extra = {}) {
    fleet_ = std::make_unique<VirtualFleet>(KILN_VFLEET_BIN, dir_ + "/vfleet", url, enroll_file_, kilnd_->adminTokenFile(), 0.001, extra);
  }

  std::string createBundle(const json& doc) {
    json b = call("POST", "/api/v1/bundles", doc, 201);
    return b.value("id", "");
  }

  static json policy(json overrides = json::object()) {
    json p = {{"canary_pods", 1},
              {"waves", {"50%", "100%"}},
              {"soak", "0s"},
              {"max_concurrent_pods", 2},
              {"capacity_floor", {{"max_percent_down", 50}}},
              {"failure_budget", {{"pods", 1}}}};
    p.update(overrides);
    return p;
  }

  std::string startRollout(const std::string& bundle, const std::vector<std::string>& pods, const json& pol) {
    json r = call("POST", "/api/v1/rollouts", {{"bundle", bundle}, {"selector", {{"pods", pods}}}, {"policy", pol}, {"start", true}},
                  201);
    EXPECT_EQ(r.value("state", ""), "running") << r.dump();
    const std::string id = r.value("id", "");
    watchRollout(id);
    return id;
  }

  json rolloutPods(const std::string& id) { return call("GET", "/api/v1/rollouts/" + id + "/pods")["items"]; }

  void expectEveryPodSucceededOnce(const std::string& id, int attempt = 1) {
    json pods = rolloutPods(id);
    for (const auto& p : pods) {
      EXPECT_EQ(p["phase"], "succeeded") << p.dump();
      EXPECT_EQ(p["attempt"], attempt) << p.dump();
    }
  }

  json compliance(const std::string& bundle) { return call("GET", "/api/v1/bundles/" + bundle + "/compliance?building=e2e-b01"); }

  std::vector<std::string> pods_;
  std::map<std::string, std::vector<std::string>> hosts_;
  std::string enroll_file_;
  std::unique_ptr<VirtualFleet> fleet_;
  std::unique_ptr<testing::KilndProcess> second_;
};

TEST_F(RolloutTest, CleanRolloutUpgradesEveryPodWithinTheConcurrencyLimit) {
  startFleet(kilnd_->url());
  const std::string bundle = createBundle(bundleDoc("1.0", kHmcV1, "28.43.3010", "575.57.08"));
  json before = compliance(bundle);
  EXPECT_EQ(before["counts"]["needs_upgrade"], kPods) << before.dump();

  json dry = call("POST", "/api/v1/rollouts",
                  {{"bundle", bundle}, {"selector", {{"buildings", {"e2e-b01"}}}}, {"policy", policy()}, {"dry_run", true}});
  EXPECT_EQ(dry["dry_run"], true);
  ASSERT_EQ(dry["plan"]["waves"].size(), 3u) << dry.dump();
  EXPECT_EQ(dry["plan"]["waves"][0]["name"], "canary");
  EXPECT_EQ(dry["plan"]["waves"][0]["pods"].size(), 1u);
  std::size_t planned = 0;
  for (const auto& w : dry["plan"]["waves"]) planned += w["pods"].size();
  EXPECT_EQ(planned, static_cast<std::size_t>(kPods));
  EXPECT_TRUE(dry["plan"]["excluded"].empty());
  EXPECT_TRUE(call("GET", "/api/v1/rollouts")["items"].empty()) << "a dry run wrote a rollout";

  const std::string id = startRollout(bundle, pods_, policy());
  InFlightSampler sampler(kilnd_->url(), kilnd_->adminToken(), id);
  json done = waitRollout(id, {"completed", "halted", "aborted"}, 200s);
  sampler.stop();
  EXPECT_EQ(done["state"], "completed") << done.dump();
  EXPECT_EQ(done["counts"]["succeeded"], kPods);
  EXPECT_LE(sampler.max(), 2) << "max_concurrent_pods crossed: " << sampler.worst();
  EXPECT_GE(sampler.max(), 1);
  EXPECT_GT(sampler.samples(), 10);
  EXPECT_EQ(done["pod_durations"]["count"], kPods);
  expectEveryPodSucceededOnce(id);

  json after = compliance(bundle);
  EXPECT_EQ(after["counts"]["compliant"], kPods) << after.dump();
  EXPECT_EQ(after["host_counts"]["needs_upgrade"], 0);
  json available = call("GET", "/api/v1/hosts?state=available&limit=1000");
  EXPECT_EQ(available["items"].size(), static_cast<std::size_t>(kPods * 18));
  json h = host(hosts_[pods_[0]][0]);
  EXPECT_NE(h.dump().find("575.57.08"), std::string::npos) << "driver version not recorded: " << h.dump();
}

TEST_F(RolloutTest, FailureBudgetHaltsTheRolloutAndResumeAfterTheFixCompletesIt) {
  // Three of 18 hosts failing leaves 60 GPUs: below a 64-GPU slice, so the pod fails.
  std::vector<std::string> broken;
  std::vector<std::string> extra;
  for (const std::string& pod : {podName(2), podName(3)})
    for (int i = 0; i < 3; ++i) {
      broken.push_back(hosts_[pod][i]);
      extra.insert(extra.end(), {"--fault", hosts_[pod][i] + ":flash_failure:count=1000"});
    }
  startFleet(kilnd_->url(), extra);
  const std::string bundle = createBundle(bundleDoc("1.0", kHmcV1, "28.43.3010", "575.57.08"));
  const std::string id = startRollout(bundle, pods_, policy());

  json halted = waitRollout(id, {"halted", "completed"}, 200s);
  for (const auto& p : rolloutPods(id))
    if (p["pod"] == podName(2) || p["pod"] == podName(3)) watchRun(p.value("run_id", ""));
  ASSERT_EQ(halted["state"], "halted") << halted.dump();
  EXPECT_FALSE(halted.value("halt_reason", "").empty()) << halted.dump();
  EXPECT_GE(halted["counts"]["failed"].get<int>(), 2);

  // Halted: pods in flight finish, nothing new starts.
  std::set<std::string> started;
  for (const auto& p : rolloutPods(id))
    if (p["phase"] != "pending") started.insert(p["pod"].get<std::string>());
  ASSERT_TRUE(waitUntil(
      [&] {
        for (const auto& p : rolloutPods(id)) {
          const std::string ph = p["phase"];
          if (ph == "draining" || ph == "upgrading" || ph == "validating") return false;
        }
        return true;
      },
      120s, 200ms));
  std::this_thread::sleep_for(3s);  // ~15 controller passes
  for (const auto& p : rolloutPods(id))
    if (p["phase"] != "pending") {
      EXPECT_TRUE(started.count(p["pod"].get<std::string>())) << "started after the halt: " << p.dump();
    }
  EXPECT_EQ(call("GET", "/api/v1/rollouts/" + id)["state"], "halted");

  // The fix: the faults are gone and the hosts the upgrade broke are back (an admin override,
  // audited; the long way is repair -> repair_complete -> quarantine validation).
  for (const auto& h : broken) fleet_->control("clear " + h);
  std::this_thread::sleep_for(3s);  // the fleet reads its control file every 2 s
  for (const auto& h : broken) {
    json before = host(h);
    EXPECT_TRUE(before["state"] == "repair" || before["state"] == "failed") << before.dump();
    call("POST", "/api/v1/hosts/" + h + "/actions",
         {{"action", "override"}, {"to", "available"}, {"reason", "e2e: flash fixed, host verified by hand"}});
  }

  json resumed = call("POST", "/api/v1/rollouts/" + id + "/resume");
  EXPECT_EQ(resumed["state"], "running") << resumed.dump();
  json done = waitRollout(id, {"completed", "halted"}, 200s);
  EXPECT_EQ(done["state"], "completed") << done.dump();
  for (const auto& p : rolloutPods(id)) {
    EXPECT_EQ(p["phase"], "succeeded") << p.dump();
    const bool retried = p["pod"] == podName(2) || p["pod"] == podName(3);
    if (retried) {
      EXPECT_EQ(p["attempt"], 2) << p.dump();
    }
  }
  EXPECT_EQ(compliance(bundle)["counts"]["compliant"], kPods);
}

TEST_F(RolloutTest, RollbackPutsThePreviousBundleBackOnThePodsTheRolloutChanged) {
  startFleet(kilnd_->url());
  const std::vector<std::string> pods(pods_.begin(), pods_.begin() + 4);
  const json fast = policy({{"waves", {"100%"}}, {"max_concurrent_pods", 3}, {"max_rebooting_pods_per_building", 3}});
  const std::string v1 = createBundle(bundleDoc("1.0", kHmcV1, "28.43.3010", "575.57.08"));
  const std::string v2 = createBundle(bundleDoc("2.0", kHmcV2, "28.44.1036", "580.65.06"));

  const std::string r1 = startRollout(v1, pods, fast);
  ASSERT_EQ(waitRollout(r1, {"completed", "halted"}, 150s)["state"], "completed");
  const std::string r2 = startRollout(v2, pods, fast);
  ASSERT_EQ(waitRollout(r2, {"completed", "halted"}, 150s)["state"], "completed");
  for (const auto& p : compliance(v2)["pods"])
    if (std::find(pods.begin(), pods.end(), p["pod"]) != pods.end()) {
      EXPECT_EQ(p["state"], "compliant") << p.dump();
    }

  // r1 cannot be rolled back past r2: that would silently undo r2 on the same pods.
  json past = call("POST", "/api/v1/rollouts/" + r1 + "/rollback", nullptr, 409);
  EXPECT_EQ(past["error"]["details"]["rollout"], r2) << past.dump();
  EXPECT_NE(past["error"]["message"].get<std::string>().find("roll back " + r2 + " first"), std::string::npos) << past.dump();

  json back = call("POST", "/api/v1/rollouts/" + r2 + "/rollback", nullptr, 201);
  const std::string rb = back.value("id", "");
  watchRollout(rb);
  EXPECT_NE(rb, r2);
  EXPECT_EQ(back["bundle"]["id"], v1) << back.dump();
  json done = waitRollout(rb, {"completed", "halted"}, 150s);
  EXPECT_EQ(done["state"], "completed");
  EXPECT_EQ(done["total"], pods.size());
  expectEveryPodSucceededOnce(rb);
  for (const auto& p : compliance(v1)["pods"]) {
    const bool touched = std::find(pods.begin(), pods.end(), p["pod"]) != pods.end();
    EXPECT_EQ(p["state"], touched ? "compliant" : "needs_upgrade") << p.dump();
  }
}

// kilnd dies between committing a claim (assignment 'dispatched') and the poll's reply reaching
// the host: after the restart the host's next idle poll gets the same assignment again
// (PgRunStore::claimWork), instead of the pod waiting out the lease (20-30 min for flash and
// reboot steps).
//
// The kills are tied to the rollout's progress (the first once a pod is in flight, the next
// ones after 2 and 4 pods succeeded) plus a random delay, so they land at random points of a
// pod's upgrade but never all after the rollout ended: with fixed gaps a fast run finished
// before the second kill (CI, 2026-12-04).
TEST_F(RolloutTest, KilndKilledAtRandomPointsStillCompletesWithoutUpgradingAPodTwice) {
  startFleet(kilnd_->url());
  // Every agent registered before the first kill: a kill between a registration's commit and its
  // answer leaves that agent refused on its retry (the host has a live agent token it never got;
  // an operator re-enrols it), and its pod would wait for it for ever. That is the enrolment's
  // rule, not this test's subject (CI saw it once: "enrolled 143 rejected 1").
  ASSERT_TRUE(waitUntil(
      [&] {
        auto hosts = tryGet("/api/v1/hosts?limit=1000");
        if (!hosts) return false;
        std::size_t seen = 0;
        for (const auto& h : (*hosts)["items"]) seen += !h["last_seen"].is_null();
        return seen == (*hosts)["items"].size() && seen > 0;
      },
      60s, 100ms))
      << fleet_->logTail();
  const std::string bundle = createBundle(bundleDoc("1.0", kHmcV1, "28.43.3010", "575.57.08"));
  const std::string id = startRollout(bundle, pods_, policy());
  InFlightSampler sampler(kilnd_->url(), kilnd_->adminToken(), id);

  std::mt19937 rng(static_cast<unsigned>(::testing::UnitTest::GetInstance()->random_seed()) + 17);
  std::uniform_int_distribution<int> delay_ms(0, 800);
  // -1 while kilnd is down; "started" counts every pod no longer pending.
  auto progress = [&](const std::string& key) {
    auto now = tryGet("/api/v1/rollouts/" + id);
    if (!now) return -1;
    int n = 0;
    for (const auto& [phase, count] : (*now)["counts"].items())
      if (phase == key || (key == "started" && phase != "pending")) n += count.get<int>();
    return n;
  };
  auto running = [&] {
    auto now = tryGet("/api/v1/rollouts/" + id);
    return !now || (*now)["state"] == "running";
  };
  const std::vector<std::pair<std::string, int>> triggers = {{"started", 1}, {"succeeded", 2}, {"succeeded", 4}};
  int kills = 0;
  for (const auto& [key, at_least] : triggers) {
    waitUntil([&] { return progress(key) >= at_least || !running(); }, 120s, 20ms);
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms(rng)));
    if (!running()) break;
    EXPECT_EQ(kilnd_->kill(), 128 + SIGKILL);
    ++kills;
    std::this_thread::sleep_for(std::chrono::milliseconds(100 + delay_ms(rng) / 2));
    ASSERT_TRUE(kilnd_->start().ok()) << kilnd_->logTail();
  }
  RecordProperty("kilnd_kills", kills);
  EXPECT_GE(kills, 2) << "the rollout finished before kilnd could be killed twice";

  json done = waitRollout(id, {"completed", "halted", "aborted"}, 200s);
  sampler.stop();
  EXPECT_EQ(done["state"], "completed") << done.dump();
  EXPECT_LE(sampler.max(), 2) << "max_concurrent_pods crossed: " << sampler.worst();
  expectEveryPodSucceededOnce(id);
  // One upgrade run and one validation run per pod, however often kilnd died.
  json upgrades = call("GET", "/api/v1/workflow-runs?workflow=firmware-upgrade&limit=1000");
  EXPECT_EQ(upgrades["items"].size(), static_cast<std::size_t>(kPods)) << upgrades.dump();
  json validations = call("GET", "/api/v1/workflow-runs?workflow=pre-job-health&purpose=rollout&limit=1000");
  EXPECT_EQ(validations["items"].size(), static_cast<std::size_t>(kPods)) << validations.dump();
  EXPECT_EQ(compliance(bundle)["counts"]["compliant"], kPods);
}

TEST_F(RolloutTest, SecondReplicaTakesOverTheControllerWhenTheLeaderIsKilled) {
  const std::string kLeaderLine = "this kilnd now runs the controllers";
  ASSERT_TRUE(waitUntil([&] { return readFile(kilnd_->logPath()).find(kLeaderLine) != std::string::npos; }, 10s));
  second_ = newKilnd();
  ASSERT_TRUE(second_->start().ok()) << second_->logTail();
  // The agents and this test talk to the second replica; the first one holds the lock.
  http::ClientOptions o;
  o.base_url = second_->url();
  o.token = kilnd_->adminToken();
  o.timeout = 15s;
  api_ = std::make_unique<http::Client>(o);
  startFleet(second_->url());

  const std::string bundle = createBundle(bundleDoc("1.0", kHmcV1, "28.43.3010", "575.57.08"));
  const std::string id = startRollout(bundle, pods_, policy());
  ASSERT_TRUE(waitUntil(
      [&] {
        auto r = tryGet("/api/v1/rollouts/" + id);
        return r && (*r)["counts"]["succeeded"].get<int>() >= 1;
      },
      120s, 200ms));
  EXPECT_EQ(readFile(second_->logPath()).find(kLeaderLine), std::string::npos) << "both replicas ran the controllers";
  EXPECT_EQ(kilnd_->kill(), 128 + SIGKILL);
  const auto killed = std::chrono::steady_clock::now();
  ASSERT_TRUE(waitUntil([&] { return readFile(second_->logPath()).find(kLeaderLine) != std::string::npos; }, 15s, 50ms))
      << "the second replica did not take the controller over";
  const auto takeover = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - killed);
  RecordProperty("takeover_ms", static_cast<int>(takeover.count()));
  EXPECT_LT(takeover.count(), 5000);

  json done = waitRollout(id, {"completed", "halted", "aborted"}, 200s);
  EXPECT_EQ(done["state"], "completed") << done.dump();
  expectEveryPodSucceededOnce(id);
}

// Issue 16: a real Prometheus (Debian's 2.42) scrapes this kilnd every second, with the shipped
// recording rules loaded, during a rollout; the rollout's progress and its P90 pod time are read
// back through Prometheus's HTTP query API and match what kilnd's REST API says.
TEST_F(RolloutTest, ARealPrometheusScrapingKilndSeesTheRolloutsProgressAndP90) {
  const std::string prom_dir = dir_ + "/prometheus";
  std::filesystem::create_directories(prom_dir);
  for (const char* f : {"kiln-recording.yml", "kiln-alerts.yml"})
    std::filesystem::copy_file(std::string(KILN_DEPLOY_DIR) + "/prometheus/" + f, prom_dir + "/" + f);
  json viewer = call("POST", "/api/v1/tokens", json{{"role", "viewer"}, {"name", "prometheus"}}, 201);
  std::ofstream(prom_dir + "/token") << viewer.value("token", "") << "\n";
  std::ofstream(prom_dir + "/prometheus.yml")
      << "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
      << "rule_files: [kiln-recording.yml, kiln-alerts.yml]\n"
      << "scrape_configs:\n  - job_name: kilnd\n    metrics_path: /metrics\n"
      << "    authorization: {type: Bearer, credentials_file: " << prom_dir << "/token}\n"
      << "    static_configs: [{targets: ['127.0.0.1:" << kilnd_->port() << "']}]\n";
  const int port = testing::freeLoopbackPort();
  Child prometheus({"/usr/bin/prometheus", "--config.file=" + prom_dir + "/prometheus.yml",
                    "--storage.tsdb.path=" + prom_dir + "/data", "--web.listen-address=127.0.0.1:" + std::to_string(port)},
                   {{"PATH", "/usr/bin:/bin"}}, prom_dir + "/prometheus.log");
  http::ClientOptions o;
  o.base_url = "http://127.0.0.1:" + std::to_string(port);
  o.timeout = 5s;
  http::Client prom(o);
  // The instant vector of `q`, empty until Prometheus answers.
  auto query = [&](const std::string& q) {
    auto r = prom.request("GET", "/api/v1/query?query=" + http::urlEncode(q));
    if (!r.ok() || r->status != 200) return json::array();
    json doc = json::parse(r->body, nullptr, false);
    return doc.is_object() && doc["status"] == "success" ? doc["data"]["result"] : json::array();
  };
  auto value = [&](const std::string& q) -> std::optional<double> {
    json v = query(q);
    if (v.size() != 1) return std::nullopt;
    return std::stod(v[0]["value"][1].get<std::string>());
  };
  ASSERT_TRUE(waitUntil([&] { return value("up{job=\"kilnd\"}") == 1.0; }, 60s, 250ms))
      << "Prometheus never scraped kilnd:\n" << tailLines(readFile(prom_dir + "/prometheus.log"), 30);

  startFleet(kilnd_->url());
  const std::string bundle = createBundle(bundleDoc("1.0", kHmcV1, "28.43.3010", "575.57.08"));
  const std::string id = startRollout(bundle, pods_, policy());
  const std::string sel = "{rollout=\"" + id + "\"";
  std::set<double> seen;  // succeeded counts Prometheus saw while the rollout ran
  json done;
  ASSERT_TRUE(waitUntil(
      [&] {
        if (auto v = value("kiln_rollout_pod_phase" + sel + ",phase=\"succeeded\"}")) seen.insert(*v);
        done = call("GET", "/api/v1/rollouts/" + id);
        return done.value("state", "") == "completed";
      },
      200s, 200ms))
      << done.dump();
  const double p90 = done["pod_durations"]["p90_s"].get<double>();
  // The last scrape after completion: every pod succeeded, the P90 is kilnd's (3 decimals).
  EXPECT_TRUE(waitUntil([&] { return value("kiln_rollout_pod_phase" + sel + ",phase=\"succeeded\"}") == kPods; }, 20s, 250ms));
  EXPECT_TRUE(waitUntil([&] { return value("max by (rollout) (kiln_rollout_info" + sel + ",state=\"completed\"})") == 1.0; }, 20s, 250ms));
  std::optional<double> got;
  EXPECT_TRUE(waitUntil([&] { return (got = value("kiln_rollout_pod_duration_p90_seconds" + sel + "}")).has_value(); }, 20s, 250ms));
  ASSERT_TRUE(got.has_value());
  EXPECT_NEAR(*got, p90, 0.002) << done.dump();
  // Progress was seen on the way, not only at the end.
  EXPECT_GE(seen.size(), 2u) << "Prometheus saw only " << seen.size() << " distinct succeeded counts";
  // The shipped recording rules ran over the real series: the per-platform P90 exists and lies
  // within the histogram's bucket of the exact value (simulated pods take seconds: bucket 30 s).
  std::optional<double> recorded;
  EXPECT_TRUE(waitUntil([&] {
    return (recorded = value("kiln:rollout_pod_duration_seconds:p90" + sel + ",platform=\"catalina\"}")).has_value();
  }, 20s, 250ms));
  if (recorded) {
    EXPECT_GT(*recorded, 0);
    EXPECT_LE(*recorded, 30);
  }
  // The replica holds the lock, and the controller is not lagging.
  EXPECT_EQ(value("sum(kiln_leader)"), 1.0);
  auto lag = value("kiln:controller_lag_seconds");
  ASSERT_TRUE(lag.has_value());
  EXPECT_LT(*lag, 10);
  // No alert of ours even starts on a clean rollout: the test is shorter than every alert's
  // `for`, so "pending" (the condition held at an evaluation) is what can show here.
  auto alerts = prom.request("GET", "/api/v1/query?query=" + http::urlEncode("ALERTS{alertname=~\"Kiln.*\"}"));
  ASSERT_TRUE(alerts.ok());
  ASSERT_EQ(alerts->status, 200) << alerts->body;  // a failed query must not read as "no alerts"
  EXPECT_EQ(json::parse(alerts->body)["data"]["result"], json::array()) << alerts->body;
}

}  // namespace
}  // namespace kiln::e2e
