// Issue 19: deploy/examples/kiln_rollout.py, the standard-library Python client, run for real
// (python3, as a child process with an argument vector) against a real kilnd on a throwaway
// database and a simulated fleet of two pods (one kiln-vfleet process). What the script did is
// judged through the REST API; its output only for what it promises to print.

#include <array>
#include <fstream>
#include <regex>
#include <set>

#include "tests/e2e/e2e_support.h"

namespace kiln::e2e {
namespace {

const std::vector<std::string> kPods = {"e2e-b01-p01", "e2e-b01-p02"};
const std::string kPodList = "e2e-b01-p01,e2e-b01-p02";
// Both pods in one wave after the canary, no soak, a building may have both down, and the
// first failed pod halts the rollout.
const std::string kPolicy =
    R"({"canary_pods": 1, "waves": ["100%"], "soak": "0s", "capacity_floor": {"max_percent_down": 50},
        "failure_budget": {"pods": 0}})";

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

class PythonExampleTest : public E2eTest {
 protected:
  void SetUp() override {
    E2eTest::SetUp();
    if (HasFatalFailure()) return;
    importFleet(fleetYaml(static_cast<int>(kPods.size()), "available"));
    // firmware-upgrade retries a failed flash after up to a minute: 1 s keeps the halt short.
    json wf = call("GET", "/api/v1/workflows/firmware-upgrade");
    const std::string yaml = std::regex_replace(wf.value("yaml", ""), std::regex("backoff: \\w+"), "backoff: 1s");
    auto put = api_->request("PUT", "/api/v1/workflows/firmware-upgrade", yaml, "application/yaml");
    ASSERT_TRUE(put.ok() && put->status == 200) << (put.ok() ? put->body : put.error().message);
    // Newer HMC, NIC and driver than the simulator's catalina defaults, named the way
    // kiln-hwsim reads a flashed version from an artifact.
    const std::string sha(64, 'a');
    json components = json::array();
    for (const auto& [kind, version, artifact] : std::vector<std::array<std::string, 3>>{
             {"hmc_bundle", "GB200-P4975_0004_250301.1.0", "/fw/nvfw_GB200-P4975_0004_250301.1.0_prod-signed.fwpkg"},
             {"nic", "28.43.3010", "/fw/fw-ConnectX7-rel-28_43_3010-MCX750500B-0D00_Ax.bin"},
             {"driver", "575.57.08", "/drivers/NVIDIA-Linux-aarch64-575.57.08.run"}})
      components.push_back({{"kind", kind}, {"version", version}, {"artifact", artifact}, {"sha256", sha}});
    json bundle = call(
        "POST", "/api/v1/bundles",
        {{"name", "py-example-fw"}, {"version", "1.0"}, {"platforms", {"catalina"}}, {"components", components}}, 201);
    bundle_ = bundle.value("id", "");
    ASSERT_FALSE(bundle_.empty());
  }

  // Every host of both pods simulated by one kiln-vfleet, with `faults` (HOST:KIND[:k=v]).
  void startFleet(const std::vector<std::string>& faults = {}) {
    std::vector<std::string> args = {KILN_VFLEET_BIN, "--url", kilnd_->url(), "--hosts", "all", "--seed", "7"};
    args.insert(args.end(), {"--enroll-token-file", enrollTokenFile(), "--token-file", kilnd_->adminTokenFile()});
    args.insert(args.end(),
                {"--time-scale", "0.001", "--poll-wait", "5", "--idle-poll", "2", "--state-dir", dir_ + "/vfleet"});
    for (const auto& f : faults) args.insert(args.end(), {"--fault", f});
    fleet_ = std::make_unique<Child>(args, std::map<std::string, std::string>{{"PATH", "/usr/bin:/bin"}},
                                     dir_ + "/vfleet.log");
  }

  // python3 kiln_rollout.py --url <kilnd> --token-file <admin token> --interval 1 ARGS...
  CommandResult runScript(const std::vector<std::string>& args, const std::string& token_file = "") {
    std::vector<std::string> argv = {KILN_PYTHON3, std::string(KILN_EXAMPLES_DIR) + "/kiln_rollout.py"};
    argv.insert(argv.end(), {"--url", kilnd_->url(), "--interval", "1", "--token-file"});
    argv.push_back(token_file.empty() ? kilnd_->adminTokenFile() : token_file);
    argv.insert(argv.end(), args.begin(), args.end());
    return runCommand(argv, {{"PATH", "/usr/bin:/bin"}, {"LANG", "C.UTF-8"}, {"PYTHONDONTWRITEBYTECODE", "1"}}, 150s);
  }

  json rollouts() { return call("GET", "/api/v1/rollouts")["items"]; }

  // The one rollout there is, watched (printed with a failure).
  std::string onlyRollout() {
    json items = rollouts();
    EXPECT_EQ(items.size(), 1u) << items.dump();
    const std::string id = items.empty() ? "" : items[0].value("id", "");
    watchRollout(id);
    return id;
  }

  void TearDown() override {
    fleet_.reset();
    E2eTest::TearDown();
  }

  std::string bundle_;
  std::unique_ptr<Child> fleet_;
};

TEST_F(PythonExampleTest, AGoodBundleCompletesAndTheScriptExitsZero) {
  startFleet();
  auto r = runScript({"--bundle", bundle_, "--pods", kPodList, "--policy-json", kPolicy});
  ASSERT_EQ(r.status, 0) << r.output;

  const std::string id = onlyRollout();
  json done = call("GET", "/api/v1/rollouts/" + id);
  EXPECT_EQ(done["state"], "completed") << done.dump();
  std::set<std::string> succeeded;
  const json pods = call("GET", "/api/v1/rollouts/" + id + "/pods")["items"];
  for (const auto& p : pods) {
    EXPECT_EQ(p["phase"], "succeeded") << p.dump();
    succeeded.insert(p.value("pod", ""));
  }
  EXPECT_EQ(succeeded, std::set<std::string>(kPods.begin(), kPods.end()));
  json compliance = call("GET", "/api/v1/bundles/" + bundle_ + "/compliance?building=e2e-b01");
  EXPECT_EQ(compliance["counts"]["compliant"], kPods.size()) << compliance.dump();

  // The plan, then each pod's change of phase printed once.
  EXPECT_NE(r.output.find("canary: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("created rollout " + id), std::string::npos) << r.output;
  EXPECT_EQ(count(r.output, " -> succeeded"), static_cast<int>(kPods.size())) << r.output;
  for (const auto& pod : kPods)
    EXPECT_TRUE(std::regex_search(r.output, std::regex(pod + ": [a-z]+ -> succeeded"))) << r.output;
}

TEST_F(PythonExampleTest, AFailingPodHaltsTheRolloutAndTheScriptExitsOneNamingTheHalt) {
  // Three of a pod's 18 hosts failing their flash leave 60 GPUs, under a 64-GPU slice.
  std::vector<std::string> faults;
  for (const auto& pod : kPods)
    for (const char* h : {"-h01", "-h02", "-h03"}) faults.push_back(pod + h + ":flash_failure:count=1000");
  startFleet(faults);
  auto r = runScript({"--bundle", bundle_, "--pods", kPodList, "--policy-json", kPolicy});
  EXPECT_EQ(r.status, 1) << r.output;

  const std::string id = onlyRollout();
  json halted = call("GET", "/api/v1/rollouts/" + id);
  ASSERT_EQ(halted["state"], "halted") << halted.dump();
  const std::string reason = halted.value("halt_reason", "");
  EXPECT_FALSE(reason.empty()) << halted.dump();
  EXPECT_NE(r.output.find("rollout " + id + " halted: " + reason), std::string::npos) << r.output;
  int failed = 0;
  const json pods = call("GET", "/api/v1/rollouts/" + id + "/pods")["items"];
  for (const auto& p : pods)
    if (p["phase"] == "failed") {
      ++failed;
      EXPECT_NE(r.output.find("FAILED " + p.value("pod", "") + ": "), std::string::npos) << r.output;
    }
  EXPECT_GE(failed, 1) << halted.dump();
}

TEST_F(PythonExampleTest, ARetriedCreateWithTheSameIdempotencyKeyMakesOneRollout) {
  startFleet();
  const std::vector<std::string> args = {
      "--bundle", bundle_, "--pods", kPodList, "--policy-json", kPolicy, "--idempotency-key", "py-example-retry-1"};
  // The first run stops watching after a second (exit 1 while it runs, 0 if it was that
  // fast); the retry with the same key gets the same rollout back, does not start it again,
  // and watches it to the end.
  std::vector<std::string> first = args;
  first.insert(first.end(), {"--timeout", "1"});
  auto r1 = runScript(first);
  EXPECT_TRUE(r1.status == 0 || r1.status == 1) << r1.output;
  const std::string id = onlyRollout();
  auto r2 = runScript(args);
  EXPECT_EQ(r2.status, 0) << r2.output;
  EXPECT_NE(r2.output.find("created rollout " + id), std::string::npos) << r2.output;
  EXPECT_EQ(rollouts().size(), 1u) << rollouts().dump();
  EXPECT_EQ(call("GET", "/api/v1/rollouts/" + id)["state"], "completed");
}

TEST_F(PythonExampleTest, ABadTokenExitsTwoWithTheServersErrorCode) {
  const std::string bad = dir_ + "/bad-token";
  std::ofstream(bad) << "kiln_not_a_token\n";
  auto r = runScript({"--bundle", bundle_, "--pods", kPodList}, bad);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("HTTP 401 unauthenticated"), std::string::npos) << r.output;
  EXPECT_TRUE(rollouts().empty());
}

TEST_F(PythonExampleTest, AnInvalidRequestExitsTwoListingTheBadFields) {
  auto r = runScript({"--bundle", "no-such@1", "--pods", kPodList, "--policy-json", R"({"waves": "all"})"});
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("HTTP 422 invalid_content"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("  policy.waves: "), std::string::npos) << r.output;
  EXPECT_TRUE(rollouts().empty());
}

TEST_F(PythonExampleTest, ADryRunPrintsThePlanAndWritesNothing) {
  auto r = runScript(
      {"--bundle", bundle_, "--selector-json", R"({"buildings": ["e2e-b01"]})", "--policy-json", kPolicy, "--dry-run"});
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("plan: 2 pods need " + bundle_), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("canary: e2e-b01-p0"), std::string::npos) << r.output;
  EXPECT_TRUE(rollouts().empty()) << "a dry run wrote a rollout";
}

TEST_F(PythonExampleTest, AnUnreachableKilndExitsThreeAfterItsRetries) {
  const std::string closed = "http://127.0.0.1:" + std::to_string(testing::freeLoopbackPort());
  auto r = runCommand({KILN_PYTHON3, std::string(KILN_EXAMPLES_DIR) + "/kiln_rollout.py", "--url", closed,
                       "--token-file", kilnd_->adminTokenFile(), "--bundle", bundle_, "--retries", "2"},
                      {{"PATH", "/usr/bin:/bin"}}, 60s);
  EXPECT_EQ(r.status, 3) << r.output;
  EXPECT_EQ(count(r.output, "(retrying)"), 2) << r.output;
  EXPECT_NE(r.output.find("kilnd unreachable"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace kiln::e2e
