// Issue 32 end to end: a host that does not come back from a reboot is power-cycled through its
// BMC by the pod's out-of-band runner, and the run goes on. Real processes throughout: kilnd on a
// fresh database, the host's kiln-agent on kiln-hwsim, a second kiln-agent polling as the runner
// (runner:oob-e2e) that runs the real kiln-oob, and kiln-hwsim bmc speaking Redfish. The host
// "hangs" by its agent being killed mid-reboot; the BMC's power cycle gives the tray a new boot
// id, and the agent started again ("the tray booted") reports the reboot on the lease it had.

#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "tests/e2e/e2e_support.h"
#ifdef KILN_VFLEET_BIN
#include "tests/e2e/vfleet.h"
#endif

namespace kiln::e2e {
namespace {

namespace fs = std::filesystem;

constexpr const char* kPod = "e2e-b01-p01";

constexpr const char* kRebootWorkflow = R"(name: reboot-recovered
version: "1"
description: a reboot that asks for a power cycle through the BMC when the host stays silent
scope: host
steps:
  - id: power-before
    target: bmc
    run: [kiln-oob, power, status, --bmc, "{{host.bmc}}", --credential, "{{host.bmc_credential}}",
          --protocol, "{{host.bmc_protocol}}"]
    parse: json
    timeout: 30s
  - id: reboot
    type: reboot
    run: ["true"]
    timeout: 4s
    recover: {power_cycles: 1, timeout: 30s}
  - id: after
    run: [nvidia-smi, -L]
    timeout: 30s
)";

void writeFile(const std::string& path, const std::string& text, mode_t mode = 0600) {
  std::ofstream(path) << text;
  ::chmod(path.c_str(), mode);
}

class OobTest : public E2eTest {
 protected:
  void SetUp() override {
    kilnd_args_ = {"--lease-grace", "2"};
    E2eTest::SetUp();
    if (HasFatalFailure()) return;
    root_ = dir_ + "/oob";
    fs::create_directories(root_ + "/creds");
    fs::create_directories(root_ + "/runner");
    fs::create_directories(root_ + "/bin");
    writeFile(root_ + "/bmc-password", "e2e-bmc-secret\n");
    // The runner's systemd credential (LoadCredential= would put it there): user and password.
    writeFile(root_ + "/creds/bmc-tray-bmc", R"({"user": "root", "password": "e2e-bmc-secret"})");
    boot_id_file_ = root_ + "/boot_id";
    writeFile(boot_id_file_, "11111111-2222-3333-4444-555555555555\n", 0644);
    bmc_ = std::make_unique<Child>(
        std::vector<std::string>{KILN_HWSIM_BIN, "bmc", "--listen", "127.0.0.1:0", "--user", "root", "--password-file",
                                 root_ + "/bmc-password", "--port-file", root_ + "/bmc-port", "--boot-id-file",
                                 boot_id_file_},
        std::map<std::string, std::string>{}, root_ + "/bmc.log");
    ASSERT_TRUE(waitUntil([&] { return fs::exists(root_ + "/bmc-port"); }, 10s)) << readFile(root_ + "/bmc.log");
    const std::string port = readFile(root_ + "/bmc-port").substr(0, readFile(root_ + "/bmc-port").find('\n'));
    importFleet(fleetYaml(1, "available") +
                "management:\n  protocol: redfish\n  credential: tray-bmc\n  tray_bmc: \"127.0.0.1:" + port +
                "\"\n  runner: oob-e2e\n");
    hosts_ = podHosts(kPod);
    ASSERT_EQ(hosts_.size(), 18u);
    auto put = api_->request("PUT", "/api/v1/workflows/reboot-recovered", kRebootWorkflow, "application/yaml");
    ASSERT_TRUE(put.ok());
    ASSERT_TRUE(put->status == 200 || put->status == 201) << put->body;
  }

  void TearDown() override {
#ifdef KILN_VFLEET_BIN
    fleet_.reset();
#endif
    runner_.reset();
    E2eTest::TearDown();
    bmc_.reset();
    trays_.clear();
  }

  // The runner: a kiln-agent polling as runner:oob-e2e with an agent token an admin made for it.
  void startRunner() {
    json t =
        call("POST", "/api/v1/tokens", {{"role", "agent"}, {"name", "oob-e2e runner"}, {"runner", "oob-e2e"}}, 201);
    ASSERT_EQ(t.value("host", ""), "runner:oob-e2e");
    writeFile(root_ + "/runner/agent_token", t.value("token", "") + "\n");
    fs::remove(root_ + "/bin/kiln-oob");
    fs::create_symlink(KILN_OOB_BIN, root_ + "/bin/kiln-oob");
    writeFile(root_ + "/runner-boot-id", "runner-boot\n", 0644);
    runner_ = std::make_unique<Child>(
        std::vector<std::string>{KILN_AGENT_BIN,
                                 "run",
                                 "--url",
                                 kilnd_->url(),
                                 "--runner",
                                 "oob-e2e",
                                 "--state-dir",
                                 root_ + "/runner",
                                 "--inventory-command",
                                 "true",
                                 "--boot-id-file",
                                 root_ + "/runner-boot-id",
                                 "--path-prepend",
                                 root_ + "/bin",
                                 "--env-allow",
                                 "CREDENTIALS_DIRECTORY,KILN_OOB_PLAIN_HTTP",
                                 "--poll-wait",
                                 "5",
                                 "--log-level",
                                 "info"},
        std::map<std::string, std::string>{{"CREDENTIALS_DIRECTORY", root_ + "/creds"}, {"KILN_OOB_PLAIN_HTTP", "1"}},
        root_ + "/runner.log");
  }

  // The pod's 9 NVLink switch trays' BMCs: kiln-hwsim bmc processes on 127.0.0.<tray> (one port
  // for all: the whole 127/8 is loopback), and the pod's management block naming them through
  // `switch_bmc: "127.0.0.{tray}:PORT"` (a re-import updates it).
  void startSwitchTrays() {
    std::string port;
    for (int s = 1; s <= 9; ++s) {
      const std::string name = std::string(kPod) + "-s" + std::to_string(s);
      const std::string port_file = root_ + "/switch-port-" + std::to_string(s);
      trays_.push_back(std::make_unique<Child>(
          std::vector<std::string>{
              KILN_HWSIM_BIN, "bmc", "--listen", "127.0.0." + std::to_string(s) + ":" + (s == 1 ? "0" : port), "--user",
              "root", "--password-file", root_ + "/bmc-password", "--tray", name, "--firmware",
              "BMC_Firmware=88.0002.1139", "--firmware", "NVSwitch_Firmware=36.2501.0004", "--port-file", port_file},
          std::map<std::string, std::string>{}, root_ + "/switch-" + std::to_string(s) + ".log"));
      ASSERT_TRUE(waitUntil([&] { return fs::exists(port_file) && !readFile(port_file).empty(); }, 10s))
          << readFile(root_ + "/switch-" + std::to_string(s) + ".log");
      if (s == 1) port = readFile(port_file).substr(0, readFile(port_file).find('\n'));
    }
    const std::string tray_port = readFile(root_ + "/bmc-port").substr(0, readFile(root_ + "/bmc-port").find('\n'));
    json imported =
        importFleet(fleetYaml(1, "available") +
                    "management:\n  protocol: redfish\n  credential: tray-bmc\n  tray_bmc: \"127.0.0.1:" + tray_port +
                    "\"\n  switch_bmc: \"127.0.0.{tray}:" + port + "\"\n  runner: oob-e2e\n");
    EXPECT_EQ(imported.value("pods_management_updated", 0), 1) << imported.dump();
  }
  // A simulated switch-tray image of 36.2601.0001, and its sha256.
  std::pair<std::string, std::string> switchImage() {
    const std::string image = root_ + "/nvswitch.fwpkg";
    std::ofstream(image) << "KILN-HWSIM-FW NVSwitch_Firmware 36.2601.0001\n" << std::string(100000, 'y');
    return {image, runCommand({"/usr/bin/sha256sum", image}, {}).output.substr(0, 64)};
  }
#ifdef KILN_VFLEET_BIN
  // The pod whole: its switch trays' BMCs, the runner, and its 18 hosts in kiln-vfleet.
  void startWholePod() {
    startSwitchTrays();
    if (HasFatalFailure()) return;
    startRunner();
    fleet_ = std::make_unique<VirtualFleet>(KILN_VFLEET_BIN, dir_ + "/vfleet", kilnd_->url(), enrollTokenFile(),
                                            kilnd_->adminTokenFile(), 0.001, std::vector<std::string>{});
  }
  std::unique_ptr<VirtualFleet> fleet_;
#endif
  // A rollout of `bundle` to the pod alone (one wave), followed to its end.
  json rollOutToThePod(const std::string& bundle) {
    json r = call("POST", "/api/v1/rollouts",
                  {{"bundle", bundle},
                   {"selector", {{"pods", {kPod}}}},
                   {"policy",
                    {{"canary_pods", 1},
                     {"waves", {"100%"}},
                     {"soak", "0s"},
                     {"max_concurrent_pods", 1},
                     {"capacity_floor", {{"max_percent_down", 100}}},
                     {"failure_budget", {{"pods", 1}}}}},
                   {"start", true}},
                  201);
    watchRollout(r.value("id", ""));
    return waitRollout(r.value("id", ""), {"completed", "halted", "aborted"}, 200s);
  }
  // Each tray's BMC took one push, then a power cycle (the activation), in that order.
  void expectEveryTrayFlashedThenCycled() {
    for (int s = 1; s <= 9; ++s) {
      const std::string log = readFile(root_ + "/switch-" + std::to_string(s) + ".log");
      EXPECT_NE(log.find("update pushed (1 so far)"), std::string::npos) << "tray " << s << ": " << log;
      EXPECT_NE(log.find("reset PowerCycle"), std::string::npos) << "tray " << s << ": " << log;
      EXPECT_LT(log.find("update pushed"), log.find("reset PowerCycle")) << "pushed, then activated: " << log;
    }
  }

  std::string root_, boot_id_file_;
  std::vector<std::string> hosts_;
  std::unique_ptr<Child> bmc_, runner_;
  std::vector<std::unique_ptr<Child>> trays_;
};

TEST_F(OobTest, AHostSilentAfterItsRebootIsPowerCycledThroughItsBmcAndTheRunGoesOn) {
  const std::string host = hosts_[0];
  startRunner();
  agents_ = makeAgents(0.001);
  agents_->extra_args = {"--boot-id-file", boot_id_file_};
  agents_->start(host);
  watchAgent(host);

  json run = startRun({{"workflow", "reboot-recovered"}, {"hosts", {host}}, {"purpose", "manual"}});
  const std::string id = run.value("id", "");
  // The host's agent starts the reboot; then the tray "hangs": its agent dies and never reports.
  // (The agent journals the reboot's start, with the boot id it left, before it runs it.)
  ASSERT_TRUE(waitUntil(
      [&] {
        const std::string journal = readFile(agents_->agentDir(host) + "/journal.jsonl");
        return journal.find("\"step_id\":\"reboot\"") != std::string::npos;
      },
      60s))
      << agents_->logTail(host) << "\nrunner:\n"
      << tailLines(readFile(root_ + "/runner.log"), 30);
  agents_->stop(host, SIGKILL);
  const std::string before = readFile(boot_id_file_);

  // The lease runs out (4 s + 2 s grace); the runner power-cycles the tray through its BMC.
  ASSERT_TRUE(waitUntil([&] { return readFile(boot_id_file_) != before; }, 60s))
      << "no power cycle reached the BMC\nrunner:\n"
      << tailLines(readFile(root_ + "/runner.log"), 40) << "\nbmc:\n"
      << readFile(root_ + "/bmc.log");
  EXPECT_NE(readFile(root_ + "/bmc.log").find("reset PowerCycle"), std::string::npos) << readFile(root_ + "/bmc.log");
  agents_->start(host);  // the tray booted

  json done = waitRun(id, 90s);
  ASSERT_EQ(done.value("state", ""), "passed") << done.dump(1);
  auto reboot = stepRecords(done, host, "reboot");
  ASSERT_GE(reboot.size(), 2u) << done.dump(1);
  bool warned = false, passed = false;
  for (const auto& r : reboot) {
    warned |=
        r.value("outcome", "") == "warned" && r.value("message", "").find("power cycle 1 of 1") != std::string::npos;
    passed |= r.value("outcome", "") == "passed";
  }
  EXPECT_TRUE(warned && passed) << done.dump(1);
  EXPECT_EQ(stepRecords(done, host, "after").size(), 1u);
  EXPECT_EQ(stepRecords(done, host, "power-before").at(0).value("outcome", ""), "passed");

  // Nothing the runner printed or kilnd stored names the BMC's password.
  EXPECT_EQ(readFile(root_ + "/runner.log").find("e2e-bmc-secret"), std::string::npos);
  EXPECT_EQ(done.dump().find("e2e-bmc-secret"), std::string::npos);
}

// The rack recipe's BMC order through the runner (workflows/tray-bmc-firmware.yaml): the runner
// fetches and verifies the image, kiln-oob pushes it through Redfish and follows the Task, resets
// the BMC into it (the tray stays on) and reads the version back from the BMC's own inventory.
TEST_F(OobTest, ATraysBmcFirmwareIsPushedResetIntoAndReadBackThroughTheRunner) {
  startRunner();
  const std::string host = hosts_[1];
  const std::string image = root_ + "/bmc.fwpkg";
  std::ofstream(image) << "KILN-HWSIM-FW BMC_Firmware 25.09-1\n" << std::string(100000, 'x');
  const std::string sha = runCommand({"/usr/bin/sha256sum", image}, {}).output.substr(0, 64);
  ASSERT_EQ(sha.size(), 64u);
  json run = startRun({{"workflow", "tray-bmc-firmware"},
                       {"hosts", {host}},
                       {"purpose", "manual"},
                       {"params", {{"bmc_image", image + "#sha256=" + sha}, {"bmc_sha256", sha}, {"bmc_version", "25.09-1"}}}});
  json done = waitRun(run.value("id", ""), 90s);
  ASSERT_EQ(done.value("state", ""), "passed") << done.dump(1) << "\nrunner:\n" << tailLines(readFile(root_ + "/runner.log"), 30);
  for (const char* step : {"bmc-flash", "bmc-reset", "bmc-read-back"}) {
    auto records = stepRecords(done, host, step);
    ASSERT_EQ(records.size(), 1u) << step;
    EXPECT_EQ(records[0].value("outcome", ""), "passed") << step;
  }
  const std::string log = readFile(root_ + "/bmc.log");
  EXPECT_NE(log.find("update pushed (1 so far)"), std::string::npos) << log;
  EXPECT_NE(log.find("manager reset (1 so far)"), std::string::npos) << log;
  EXPECT_EQ(log.find("reset PowerCycle"), std::string::npos) << "the tray's power is untouched: " << log;
  EXPECT_LT(log.find("update pushed"), log.find("manager reset")) << "pushed first, then reset";
}

// The pod's 9 NVLink switch trays through the runner (workflows/switch-tray-firmware.yaml): one
// step per pod pushes the verified image to every tray's own BMC (kiln-hwsim bmc, one process per
// tray on 127.0.0.<tray>), power-cycles them to activate it, and reads each tray's version back;
// the pod's switch-tray versions are then what each tray said of itself.
TEST_F(OobTest, ThePodsSwitchTraysAreFlashedCycledAndEachReadBackFromItself) {
  startSwitchTrays();
  if (HasFatalFailure()) return;
  startRunner();
  const auto [image, sha] = switchImage();
  ASSERT_EQ(sha.size(), 64u);
  json run = startRun({{"workflow", "switch-tray-firmware"},
                       {"pods", {kPod}},
                       {"purpose", "manual"},
                       {"params",
                        {{"nvswitch_image", image + "#sha256=" + sha},
                         {"nvswitch_sha256", sha},
                         {"nvswitch_version", "36.2601.0001"}}}});
  json done = waitRun(run.value("id", ""), 120s);
  ASSERT_EQ(done.value("state", ""), "passed") << done.dump(1).substr(0, 6000) << "\nrunner:\n"
                                               << tailLines(readFile(root_ + "/runner.log"), 30);
  // Once for the pod, by its first tray's step on the runner; the others share it.
  for (const char* step : {"switch-flash", "switch-activate", "switch-read-back"}) {
    auto led = stepRecords(done, hosts_[0], step);
    ASSERT_EQ(led.size(), 1u) << step;
    EXPECT_EQ(led[0].value("outcome", ""), "passed") << step << " " << led[0].dump();
    EXPECT_EQ(stepRecords(done, hosts_[5], step).at(0).value("outcome", ""), "shared") << step;
  }
  expectEveryTrayFlashedThenCycled();
  // Every switch tray's version is its own read-back now (the import had said 36.2501.0004).
  json pod = call("GET", std::string("/api/v1/pods/") + kPod);
  EXPECT_EQ(pod["component_versions"]["nvswitch"], (json{{"36.2601.0001", 9}})) << pod["component_versions"].dump();
  for (const auto& t : pod["switch_trays"])
    EXPECT_EQ(t["versions"].value("nvswitch", ""), "36.2601.0001") << t.dump();  // each tray by name
  EXPECT_EQ(readFile(root_ + "/runner.log").find("e2e-bmc-secret"), std::string::npos);
  EXPECT_EQ(done.dump().find("e2e-bmc-secret"), std::string::npos);
}

#ifdef KILN_VFLEET_BIN
// The issue's bar: a bundle with switch-tray firmware upgrades and verifies all 9 switch trays of
// the pod. A real rollout (drain, the bundle's install workflow on the runner, validation on the
// hosts of kiln-vfleet, the consistency rule, undrain), and compliance counting the trays by
// their own read-back.
TEST_F(OobTest, ARolloutOfSwitchTrayFirmwareUpgradesAndVerifiesAllNineTraysOfThePod) {
  startWholePod();
  if (HasFatalFailure()) return;
  const auto [image, sha] = switchImage();
  ASSERT_EQ(sha.size(), 64u);
  json bundle = call(
      "POST", "/api/v1/bundles",
      {{"name", "e2e-nvswitch"},
       {"version", "36.2601"},
       {"platforms", {"catalina"}},
       {"workflow", "switch-tray-firmware"},
       {"components", {{{"kind", "nvswitch"}, {"version", "36.2601.0001"}, {"artifact", image}, {"sha256", sha}}}}},
      201);
  const std::string id = bundle.value("id", "");
  const std::string compliance = "/api/v1/bundles/" + id + "/compliance?building=e2e-b01";
  EXPECT_EQ(call("GET", compliance)["counts"]["needs_upgrade"], 1) << call("GET", compliance).dump();

  json done = rollOutToThePod(id);
  ASSERT_EQ(done.value("state", ""), "completed") << done.dump() << "\nrunner:\n"
                                                  << tailLines(readFile(root_ + "/runner.log"), 30) << "\nvfleet:\n"
                                                  << fleet_->logTail();
  expectEveryTrayFlashedThenCycled();
  json after = call("GET", compliance);
  EXPECT_EQ(after["counts"]["compliant"], 1) << after.dump();
  json pod = call("GET", std::string("/api/v1/pods/") + kPod);
  EXPECT_EQ(pod["component_versions"]["nvswitch"], (json{{"36.2601.0001", 9}})) << pod["component_versions"].dump();
  EXPECT_EQ(pod.value("state", ""), "in_service") << pod.dump().substr(0, 2000);
}

// The whole rack in one workflow (workflows/rack-firmware.yaml) over a bundle of tray and
// switch-tray firmware: the hosts (kiln-vfleet) flash their trays, the runner the switch trays,
// the pod is activated once, and every BMC and switch tray is read back and recorded by itself.
TEST_F(OobTest, ARackFirmwareRolloutUpgradesTraysAndSwitchTraysAndReadsEveryDeviceBack) {
  startWholePod();
  if (HasFatalFailure()) return;
  const auto [image, sha] = switchImage();
  ASSERT_EQ(sha.size(), 64u);
  json doc = bundleDoc("1.0", "GB200-P4975_0004_250601.1.0", "28.43.2026", "570.124.06");
  doc["name"] = "e2e-rack";
  doc["workflow"] = "rack-firmware";
  doc["components"] =
      json::array({doc["components"][0],
                   {{"kind", "nvswitch"}, {"version", "36.2601.0001"}, {"artifact", image}, {"sha256", sha}}});
  json bundle = call("POST", "/api/v1/bundles", doc, 201);
  json done = rollOutToThePod(bundle.value("id", ""));
  ASSERT_EQ(done.value("state", ""), "completed") << done.dump() << "\nrunner:\n"
                                                  << tailLines(readFile(root_ + "/runner.log"), 30) << "\nvfleet:\n"
                                                  << fleet_->logTail();
  expectEveryTrayFlashedThenCycled();
  json pod = call("GET", std::string("/api/v1/pods/") + kPod);
  const json& versions = pod["component_versions"];
  EXPECT_EQ(versions["nvswitch"], (json{{"36.2601.0001", 9}})) << versions.dump();
  EXPECT_EQ(versions["hmc_bundle"], (json{{"GB200-P4975_0004_250601.1.0", 18}})) << versions.dump();
  // Every tray's BMC version is the one its BMC read back (kiln-hwsim's), not the fleet file's.
  EXPECT_EQ(versions["bmc"], (json{{"25.06-2", 18}})) << versions.dump();
  EXPECT_EQ(readFile(root_ + "/runner.log").find("e2e-bmc-secret"), std::string::npos);
}
#endif

// Trust at the edge: a host's agent token cannot take or report the runner's steps, and a
// runner's token acts only for its own key.
TEST_F(OobTest, AHostsTokenCannotPollAsTheRunner) {
  json t = call("POST", "/api/v1/tokens", {{"role", "agent"}, {"name", "r"}, {"runner", "oob-e2e"}}, 201);
  http::ClientOptions o;
  o.base_url = kilnd_->url();
  o.token = t.value("token", "");
  http::Client runner(o);
  auto other = runner.request("GET", "/api/v1/agents/runner:oob-other/work?wait=0", "", "");
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->status, 403) << other->body;
  auto as_host = runner.request("GET", "/api/v1/agents/" + hosts_[0] + "/work?wait=0", "", "");
  ASSERT_TRUE(as_host.ok());
  EXPECT_EQ(as_host->status, 403) << as_host->body;
  auto own = runner.request("GET", "/api/v1/agents/runner:oob-e2e/work?wait=0", "", "");
  ASSERT_TRUE(own.ok());
  EXPECT_EQ(own->status, 204) << own->body;
  // A runner token for a name that is not one, or for a host and a runner at once: 422.
  call("POST", "/api/v1/tokens", {{"role", "agent"}, {"name", "r"}, {"runner", "Bad Name"}}, 422);
  call("POST", "/api/v1/tokens", {{"role", "agent"}, {"name", "r"}, {"runner", "a"}, {"host", hosts_[0]}}, 422);
  call("POST", "/api/v1/tokens", {{"role", "viewer"}, {"name", "r"}, {"runner", "a"}}, 422);
}

}  // namespace
}  // namespace kiln::e2e
