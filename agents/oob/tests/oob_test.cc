// kiln-oob's pieces alone (issue 32): BMC addresses, credentials by reference (a file others can
// read is refused; secrets never shown), the IPMI driver's argv and answers over a scripted
// runner (the password never in argv), and the CLI over a fake PowerControl.

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "agents/oob/bmc_credentials.h"
#include "agents/oob/ipmi_power.h"
#include "agents/oob/oob_cli.h"
#include "agents/oob/redfish_power.h"
#include "common/crypto.h"
#include "common/exec/fake_process_runner.h"

namespace kiln::oob {
namespace {

namespace fs = std::filesystem;

TEST(BmcAddressTest, TakesHostsPortsAndBracketedV6AndRefusesWhatIsNotAnAddress) {
  auto a = parseBmcAddress("bmc-b01-p01-t03.mgmt");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->address, "bmc-b01-p01-t03.mgmt");
  EXPECT_EQ(a->port, 623);
  a = parseBmcAddress("10.1.2.3:9623");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->address, "10.1.2.3");
  EXPECT_EQ(a->port, 9623);
  a = parseBmcAddress("[fd00::17]:623");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->address, "fd00::17");
  for (const char* bad :
       {"", "-oProxyCommand=x", "fd00::17", "host:0", "host:70000", "host:x", "a b", "[fd00::1", "user@host", ":623"})
    EXPECT_FALSE(parseBmcAddress(bad).ok()) << bad;
}

class CredentialsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kiln-oob-cred-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text, mode_t mode) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    ::chmod(path.c_str(), mode);
    return path;
  }
  fs::path dir_;
};

TEST_F(CredentialsTest, ReadsACredentialByNameFromAPrivateFile) {
  const std::string file = write(
      "creds.json",
      R"({"bmc-admin": {"user": "kiln", "password": "pa55:w0rd"}, "other": {"user": "x", "password": "y"}})", 0600);
  auto c = loadBmcCredential("bmc-admin", file, "");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->user, "kiln");
  EXPECT_EQ(c->password.reveal(), "pa55:w0rd");
  EXPECT_EQ(c->password.shown(), "***");
  auto missing = loadBmcCredential("nope", file, "");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
}

// The attacker's angle: a credential file any user can read (or change) is refused before a
// byte is read, and the refusal says why without the secret.
TEST_F(CredentialsTest, AFileOtherUsersCanReadIsRefusedAndNoSecretIsShown) {
  const std::string file =
      write("creds.json", R"({"bmc-admin": {"user": "kiln", "password": "hunter2-secret"}})", 0644);
  auto c = loadBmcCredential("bmc-admin", file, "");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(c.error().message.find("mode 0644"), std::string::npos) << c.error().message;
  EXPECT_EQ(c.error().message.find("hunter2"), std::string::npos);
  ::chmod(file.c_str(), 0660);
  EXPECT_FALSE(loadBmcCredential("bmc-admin", file, "").ok());
  // A symlink planted where the file should be is not followed.
  const std::string real = write("real.json", R"({"bmc-admin": {"user": "kiln", "password": "x"}})", 0600);
  fs::create_symlink(real, dir_ / "link.json");
  EXPECT_FALSE(loadBmcCredential("bmc-admin", (dir_ / "link.json").string(), "").ok());
  // A malformed entry names the file and what was expected, not what it held.
  const std::string bad = write("bad.json", R"({"bmc-admin": {"user": "kiln", "pass": "hunter2-secret"}})", 0600);
  auto m = loadBmcCredential("bmc-admin", bad, "");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message.find("expected {\"user\""), std::string::npos) << m.error().message;
  EXPECT_EQ(m.error().message.find("hunter2"), std::string::npos);
  EXPECT_FALSE(loadBmcCredential("../etc/shadow", bad, "").ok());
}

TEST_F(CredentialsTest, ASystemdCredentialGoesBeforeTheFile) {
  const std::string file = write("creds.json", R"({"bmc-admin": {"user": "fromfile", "password": "a"}})", 0600);
  fs::create_directories(dir_ / "creds.d");
  ::chmod((dir_ / "creds.d").c_str(), 0700);
  write("creds.d/bmc-bmc-admin", R"({"user": "fromsystemd", "password": "b"})", 0400);
  auto c = loadBmcCredential("bmc-admin", file, (dir_ / "creds.d").string());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->user, "fromsystemd");
  auto other = loadBmcCredential("bmc-admin", file, (dir_ / "empty.d").string());
  ASSERT_TRUE(other.ok()) << other.error().message;
  EXPECT_EQ(other->user, "fromfile");
}

TEST(RedactTest, EveryOccurrenceOfTheSecretIsHidden) {
  EXPECT_EQ(redact("pw=abc; again abc.", Secret("abc")), "pw=***; again ***.");
  EXPECT_EQ(redact("nothing here", Secret("abc")), "nothing here");
  EXPECT_EQ(redact("x", Secret()), "x");
}

struct IpmiUnderTest {
  std::shared_ptr<exec::FakeProcessRunner> runner = std::make_shared<exec::FakeProcessRunner>();
  IpmiPower power{runner, [](const std::string& name) -> Result<BmcCredential> {
                    if (name != "bmc-admin") return notFound("no BMC credential '" + name + "'");
                    return BmcCredential{"kiln", Secret("hunter2-secret")};
                  }};
  BmcEndpoint bmc{"10.0.0.7", 623, "bmc-admin", 17};
};

// The password reaches ipmitool only through its environment: never argv, which any user of the
// runner can read from /proc/<pid>/cmdline.
TEST(IpmiPowerTest, ThePasswordGoesInTheEnvironmentNeverInArgv) {
  IpmiUnderTest t;
  t.runner->script("/usr/bin/ipmitool", exec::FakeProcessRunner::exited(0, "Chassis Power is off\n"));
  auto s = t.power.status(t.bmc);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(*s, PowerState::kOff);
  ASSERT_EQ(t.runner->specs().size(), 1u);
  const auto spec = t.runner->specs()[0];
  EXPECT_EQ(spec.argv,
            (std::vector<std::string>{"/usr/bin/ipmitool", "-I", "lanplus", "-H", "10.0.0.7", "-p", "623", "-U", "kiln",
                                      "-E", "-C", "17", "-R", "2", "-N", "2", "chassis", "power", "status"}));
  for (const auto& a : spec.argv) EXPECT_EQ(a.find("hunter2"), std::string::npos);
  EXPECT_EQ(spec.env.at("IPMI_PASSWORD"), "hunter2-secret");
  EXPECT_EQ(spec.env.size(), 2u) << "nothing of the runner's own environment";
  EXPECT_LE(spec.timeout, std::chrono::milliseconds(20000));
}

TEST(IpmiPowerTest, AFailureSaysWhatWasTriedAndNeverTheSecret) {
  IpmiUnderTest t;
  t.runner->script(
      "/usr/bin/ipmitool",
      exec::FakeProcessRunner::exited(
          1, "", "password hunter2-secret rejected\nError: Unable to establish IPMI v2 / RMCP+ session\n"));
  auto st = t.power.act(t.bmc, PowerAction::kCycle);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(st.error().message.find("ipmitool 10.0.0.7:623"), std::string::npos) << st.error().message;
  EXPECT_NE(st.error().message.find("refused user 'kiln' with cipher suite 17"), std::string::npos)
      << st.error().message;
  EXPECT_EQ(st.error().message.find("hunter2"), std::string::npos) << st.error().message;
  EXPECT_EQ(t.runner->argvs()[0].back(), "cycle");

  t.runner->script("/usr/bin/ipmitool", exec::FakeProcessRunner::timedOut());
  auto s = t.power.status(t.bmc);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("timed out"), std::string::npos) << s.error().message;

  t.bmc.credential = "nope";
  auto none = t.power.status(t.bmc);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(t.runner->runCount(), 2u) << "no ipmitool without a credential";
}

TEST(IpmiPowerTest, TheSelListBecomesEntriesAndNoiseIsSkipped) {
  auto entries = parseSelList(
      "   1 | 12/07/2026 | 13:40:01 | Power Unit #0x31 | Power off/down | Asserted\n"
      "   a | Pre-Init  |0000045454| Temperature #0x30 | Upper Critical going high | Asserted\n"
      "Get SDR 0000 command failed: Requested sensor, data, or record not found\n");
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].id, "1");
  EXPECT_EQ(entries[0].created, "12/07/2026 13:40:01");
  EXPECT_EQ(entries[0].message, "Power Unit #0x31 | Power off/down | Asserted");
  EXPECT_EQ(entries[1].id, "a");
  EXPECT_TRUE(parseSelList("SEL has no entries\n").empty());
  EXPECT_TRUE(parseSelList("").empty());
}

TEST(IpmiPowerTest, OnlyAStatedPowerStateIsAnAnswer) {
  EXPECT_EQ(*parseChassisPowerStatus("Chassis Power is on\n"), PowerState::kOn);
  EXPECT_EQ(*parseChassisPowerStatus("Chassis Power is off"), PowerState::kOff);
  EXPECT_FALSE(parseChassisPowerStatus("").ok());
  EXPECT_FALSE(parseChassisPowerStatus("Chassis Power is unknown").ok());
}

// What a broken or hostile BMC answers is an error naming what was missing, never a crash and
// never a link to somewhere else followed.
TEST(RedfishShapeTest, PowerStateAndResetActionAreReadOnlyFromTheShapeRedfishGivesThem) {
  using nlohmann::json;
  EXPECT_EQ(*parseRedfishPowerState(json{{"PowerState", "On"}}), PowerState::kOn);
  EXPECT_EQ(*parseRedfishPowerState(json{{"PowerState", "PoweringOn"}}), PowerState::kOff);
  for (const json& bad :
       {json(), json::array(), json{{"PowerState", 1}}, json{{"PowerState", "Exploded"}}, json{{"Power", "On"}}})
    EXPECT_FALSE(parseRedfishPowerState(bad).ok()) << bad.dump();
  json system = {{"Actions",
                  {{"#ComputerSystem.Reset",
                    {{"target", "/redfish/v1/Systems/1/Actions/ComputerSystem.Reset"},
                     {"ResetType@Redfish.AllowableValues", {"On", "ForceOff", 7}}}}}}};
  auto r = resetAction(system);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->first, "/redfish/v1/Systems/1/Actions/ComputerSystem.Reset");
  EXPECT_EQ(r->second, (std::vector<std::string>{"On", "ForceOff"}));
  for (const char* target :
       {"https://evil.example/x", "/redfish/v1/../../etc", "/other", "/redfish/v1/a b", "/redfish/v1/x?y"}) {
    system["Actions"]["#ComputerSystem.Reset"]["target"] = target;
    EXPECT_FALSE(resetAction(system).ok()) << target;
  }
  EXPECT_FALSE(resetAction(json{{"Actions", "none"}}).ok());
  EXPECT_EQ(resetTypeFor(PowerAction::kCycle), "PowerCycle");
  EXPECT_EQ(resetTypeFor(PowerAction::kOff), "ForceOff");
}

// A PowerControl that follows a script of states, for the CLI.
class ScriptedPower final : public PowerControl {
 public:
  std::vector<PowerState> states;  // status() answers, the last repeating
  std::vector<std::string> acts;
  std::optional<Error> fail_act;
  Result<PowerState> status(const BmcEndpoint&) override {
    PowerState s = states.front();
    if (states.size() > 1) states.erase(states.begin());
    return s;
  }
  Status act(const BmcEndpoint& bmc, PowerAction a) override {
    acts.push_back(std::string(powerActionName(a)) + " " + bmc.address + ":" + std::to_string(bmc.port) + " " +
                   bmc.credential + " cs" + std::to_string(bmc.cipher_suite));
    if (fail_act) return *fail_act;
    return Ok{};
  }
};

struct CliRun {
  int code;
  std::string out, err;
};
CliRun cli(const std::vector<std::string>& args, ScriptedPower* power) {
  std::ostringstream out, err;
  OobCliOptions o;
  o.poll = std::chrono::milliseconds(1);
  int code = runOobCli(args, out, err, o, [&](const OobCliOptions&) -> std::unique_ptr<PowerControl> {
    auto p = std::make_unique<ScriptedPower>();
    *p = *power;
    return p;
  });
  return {code, out.str(), err.str()};
}

TEST(OobCliTest, ACycleWaitsForThePowerToComeBackAndPrintsJson) {
  ScriptedPower p;
  p.states = {PowerState::kOn, PowerState::kOff, PowerState::kOff, PowerState::kOn};
  auto r = cli(
      {"power", "cycle", "--bmc", "10.0.0.7:9623", "--credential", "bmc-admin", "--cipher-suite", "3", "--wait", "5"},
      &p);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, R"({"action":"cycle","before":"on","bmc":"10.0.0.7:9623","power":"on"})"
                   "\n");
}

TEST(OobCliTest, AStateNotReachedWithinTheWaitIsExitOne) {
  ScriptedPower p;
  p.states = {PowerState::kOn, PowerState::kOn};
  auto r = cli({"power", "off", "--bmc", "10.0.0.7", "--credential", "bmc-admin", "--wait", "1"}, &p);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("still on after 1 s"), std::string::npos) << r.err;
}

TEST(OobCliTest, BadUsageIsExitTwoAndTouchesNoBmc) {
  ScriptedPower p;
  p.states = {PowerState::kOn};
  for (const auto& args : std::vector<std::vector<std::string>>{
           {},
           {"power"},
           {"power", "explode", "--bmc", "h", "--credential", "c"},
           {"power", "status", "--credential", "c"},
           {"power", "status", "--bmc", "h"},
           {"power", "status", "--bmc", "-x", "--credential", "c"},
           {"power", "status", "--bmc", "h", "--credential", "../x"},
           {"power", "status", "--bmc", "h", "--credential", "c", "--timeout", "0"},
           {"power", "status", "--bmc", "h", "--credential", "c", "--password", "p"},
           {"power", "status", "--bmc", "h", "--credential"},
           {"firmware", "update", "--bmc", "h", "--credential", "c", "--protocol", "redfish"},
           {"firmware", "update", "--bmc", "h", "--credential", "c", "--component", "BMC", "--image", "/x", "--sha256",
            "ab", "--version", "1"},
           {"power", "status", "--bmc", "h", "--credential", "c", "--version", "1"},
           {"firmware", "flash", "--bmc", "h", "--credential", "c", "--protocol", "redfish"}}) {
    auto r = cli(args, &p);
    EXPECT_EQ(r.code, 2) << ::testing::PrintToString(args);
    EXPECT_NE(r.err.find("usage: kiln-oob"), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty());
  }
}

// A device list (an NVL72 pod's switch trays): each device gets its own driver; these share
// what the test counts across them.
struct FleetCounters {
  std::atomic<int> calls{0}, busy{0}, most_busy{0}, pushes{0};
  std::string failing;  // the address whose BMC does not answer
  std::chrono::milliseconds hold{0};
};

class FleetPower final : public PowerControl, public FirmwareInventory, public FirmwareUpdater {
 public:
  explicit FleetPower(FleetCounters& c) : c_(c) {}
  Result<PowerState> status(const BmcEndpoint& bmc) override {
    Busy b(c_);
    if (bmc.address == c_.failing) return unavailable("BMC " + bmc.address + " does not answer");
    return PowerState::kOn;
  }
  Status act(const BmcEndpoint&, PowerAction) override {
    Busy b(c_);
    return Ok{};
  }
  Result<std::vector<FirmwareItem>> firmware(const BmcEndpoint& bmc) override {
    Busy b(c_);
    if (bmc.address == c_.failing) return unavailable("BMC " + bmc.address + " does not answer");
    return std::vector<FirmwareItem>{{"BMC_Firmware", "BMC", "25.06-" + bmc.address, true}};
  }
  Result<FirmwareUpdateResult> update(const BmcEndpoint&, const std::string&, const std::string&,
                                      const std::string& version, std::chrono::seconds,
                                      std::chrono::milliseconds) override {
    Busy b(c_);
    ++c_.pushes;
    return FirmwareUpdateResult{"25.06-2", version, true, "/redfish/v1/TaskService/Tasks/1", "Completed"};
  }

 private:
  struct Busy {
    explicit Busy(FleetCounters& c) : c_(c) {
      ++c_.calls;
      const int now = ++c_.busy;
      for (int seen = c_.most_busy; now > seen && !c_.most_busy.compare_exchange_weak(seen, now);) {
      }
      std::this_thread::sleep_for(c_.hold);
    }
    ~Busy() { --c_.busy; }
    FleetCounters& c_;
  };
  FleetCounters& c_;
};

CliRun fleetCli(const std::vector<std::string>& args, FleetCounters& counters) {
  std::ostringstream out, err;
  OobCliOptions o;
  o.poll = std::chrono::milliseconds(1);
  int code = runOobCli(args, out, err, o, [&](const OobCliOptions&) -> std::unique_ptr<PowerControl> {
    return std::make_unique<FleetPower>(counters);
  });
  return {code, out.str(), err.str()};
}

const std::string kThreeDevices = "s1=10.0.0.1,s2=10.0.0.2:9443,s3=[fd00::3]:443";

TEST(OobCliListTest, PowerStatusOverADeviceListIsOneAnswerInTheListsOrder) {
  FleetCounters c;
  auto r =
      fleetCli({"power", "status", "--bmc", kThreeDevices, "--credential", "bmc-admin", "--protocol", "redfish"}, c);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto a = nlohmann::json::parse(r.out);
  ASSERT_EQ(a["devices"].size(), 3u) << r.out;
  EXPECT_EQ(a["failed"], nlohmann::json::array());
  const std::vector<std::string> names = {"s1", "s2", "s3"}, bmcs = {"10.0.0.1:443", "10.0.0.2:9443", "fd00::3:443"};
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(a["devices"][i]["device"], names[i]);
    EXPECT_EQ(a["devices"][i]["bmc"], bmcs[i]);
    EXPECT_EQ(a["devices"][i]["action"], "status");
    EXPECT_EQ(a["devices"][i]["power"], "on");
    EXPECT_FALSE(a["devices"][i].contains("error"));
  }
  EXPECT_EQ(c.calls, 3);
  EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << "one JSON object, one line";
}

TEST(OobCliListTest, FirmwareListOverADeviceListReadsEveryDevice) {
  FleetCounters c;
  auto r =
      fleetCli({"firmware", "list", "--bmc", kThreeDevices, "--credential", "bmc-admin", "--protocol", "redfish"}, c);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto a = nlohmann::json::parse(r.out);
  ASSERT_EQ(a["devices"].size(), 3u) << r.out;
  EXPECT_TRUE(a["failed"].empty());
  EXPECT_EQ(a["devices"][0]["device"], "s1");
  EXPECT_EQ(a["devices"][0]["firmware"][0]["version"], "25.06-10.0.0.1");
  EXPECT_EQ(a["devices"][1]["firmware"][0]["version"], "25.06-10.0.0.2");
  EXPECT_EQ(a["devices"][2]["device"], "s3");
  EXPECT_EQ(a["devices"][2]["firmware"][0]["id"], "BMC_Firmware");
}

TEST(OobCliListTest, OneFailingDeviceIsExitOneNamedInFailedAndTheOthersStillAnswer) {
  FleetCounters c;
  c.failing = "10.0.0.2";
  auto r =
      fleetCli({"power", "status", "--bmc", kThreeDevices, "--credential", "bmc-admin", "--protocol", "redfish"}, c);
  EXPECT_EQ(r.code, 1) << r.err;
  const auto a = nlohmann::json::parse(r.out);
  EXPECT_EQ(a["failed"], nlohmann::json::array({"s2"}));
  ASSERT_EQ(a["devices"].size(), 3u);
  EXPECT_EQ(a["devices"][0]["power"], "on");
  EXPECT_EQ(a["devices"][2]["power"], "on");
  const auto& bad = a["devices"][1];
  EXPECT_EQ(bad["device"], "s2");
  EXPECT_EQ(bad["bmc"], "10.0.0.2:9443");
  EXPECT_FALSE(bad.contains("power"));
  EXPECT_EQ(bad["error"], "power status 10.0.0.2:9443: BMC 10.0.0.2 does not answer");
  EXPECT_NE(r.err.find("s2: kiln-oob: power status 10.0.0.2:9443: BMC 10.0.0.2 does not answer\n"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("s1:"), std::string::npos) << r.err;
}

TEST(OobCliListTest, ParallelBoundsHowManyDevicesAreWorkedOnAtOnce) {
  FleetCounters c;
  c.hold = std::chrono::milliseconds(50);
  auto r = fleetCli({"power", "status", "--bmc", "a=h1,b=h2,c=h3,d=h4,e=h5", "--credential", "bmc-admin", "--protocol",
                     "redfish", "--parallel", "2"},
                    c);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(c.calls, 5);
  EXPECT_EQ(c.most_busy, 2) << "at most 2 at once, and more than 1";
  EXPECT_EQ(nlohmann::json::parse(r.out)["devices"].size(), 5u);

  // IPMI's process runner is shared: one device at a time, whatever --parallel says.
  FleetCounters ipmi;
  ipmi.hold = std::chrono::milliseconds(10);
  r = fleetCli({"power", "status", "--bmc", "a=h1,b=h2,c=h3", "--credential", "bmc-admin", "--parallel", "3"}, ipmi);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(ipmi.calls, 3);
  EXPECT_EQ(ipmi.most_busy, 1);
}

TEST(OobCliListTest, ParallelIsOnlyForADeviceListAndIsBounded) {
  FleetCounters c;
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"power", "status", "--bmc", "10.0.0.1", "--credential", "c", "--parallel", "2"},
           {"power", "status", "--bmc", "a=h1,b=h2", "--credential", "c", "--parallel", "0"},
           {"power", "status", "--bmc", "a=h1,b=h2", "--credential", "c", "--parallel", "33"},
           {"power", "status", "--bmc", "a=h1,b=h2", "--credential", "c", "--parallel", "x"}}) {
    auto r = fleetCli(args, c);
    EXPECT_EQ(r.code, 2) << ::testing::PrintToString(args);
    EXPECT_NE(r.err.find("--parallel"), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty());
  }
  EXPECT_EQ(c.calls, 0);
}

TEST(OobCliListTest, AMalformedListIsExitTwoNamingTheEntryAndTouchesNoDevice) {
  FleetCounters c;
  std::string many;
  for (int i = 0; i < 65; ++i) many += (i ? ",d" : "d") + std::to_string(i) + "=h";
  for (const auto& [list, says] :
       std::vector<std::pair<std::string, std::string>>{{"a=", "entry 1 'a='"},
                                                        {"=10.0.0.1", "entry 1 '=10.0.0.1'"},
                                                        {"a=x,a=y", "entry 2 'a=y': device 'a' is named twice"},
                                                        {"a b=x", "entry 1 'a b=x'"},
                                                        {"a=x,", "entry 2 is empty"},
                                                        {"a=x,,b=y", "entry 2 is empty"},
                                                        {"a=x,b", "entry 2 'b': expected NAME=HOST[:PORT]"},
                                                        {"a=x=y", "entry 1 'a=x=y'"},
                                                        {"a=h:0", "port must be 1 to 65535"},
                                                        {"a=-oProxyCommand=x", "entry 1"},
                                                        {"a=fd00::1", "brackets"},
                                                        {std::string(65, 'n') + "=h", "NAME must be 1 to 64"},
                                                        {many, "more than 64 devices"}}) {
    auto r = fleetCli({"power", "cycle", "--bmc", list, "--credential", "bmc-admin", "--protocol", "redfish"}, c);
    EXPECT_EQ(r.code, 2) << list;
    EXPECT_NE(r.err.find(says), std::string::npos) << list << ": " << r.err;
    EXPECT_NE(r.err.find("usage: kiln-oob"), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
  EXPECT_EQ(c.calls, 0);
}

TEST(OobCliListTest, DeviceIndependentBadUsageIsSaidOnceBeforeAnyDevice) {
  FleetCounters c;
  auto r = fleetCli({"power", "status", "--bmc", kThreeDevices, "--protocol", "redfish"}, c);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err.find("--credential is required"), r.err.rfind("--credential is required")) << r.err;
  r = fleetCli({"power", "status", "--bmc", kThreeDevices, "--credential", "c", "--frobnicate", "1"}, c);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(c.calls, 0);
}

TEST(OobCliListTest, AFirmwareUpdateWithAWrongSha256IsRefusedOnceAndPushesNowhere) {
  const fs::path image = fs::temp_directory_path() / ("kiln-oob-image-" + std::to_string(::getpid()));
  std::ofstream(image) << "KILN-HWSIM-FW BMC_Firmware 25.09-1\n";
  FleetCounters c;
  std::vector<std::string> args = {"firmware",  "update",       "--bmc",     kThreeDevices, "--credential",
                                   "bmc-admin", "--protocol",   "redfish",   "--component", "BMC_Firmware",
                                   "--image",   image.string(), "--version", "25.09-1",     "--sha256"};
  args.push_back(std::string(64, 'a'));
  auto r = fleetCli(args, c);
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(r.out.empty()) << r.out;
  const auto first = r.err.find("only verified bits reach a BMC");
  EXPECT_NE(first, std::string::npos) << r.err;
  EXPECT_EQ(first, r.err.rfind("only verified bits reach a BMC")) << "said once: " << r.err;
  EXPECT_EQ(c.calls, 0);
  EXPECT_EQ(c.pushes, 0);

  // The right sha256: the same verified bytes go to every device.
  args.back() = sha256Hex("KILN-HWSIM-FW BMC_Firmware 25.09-1\n");
  r = fleetCli(args, c);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(c.pushes, 3);
  const auto a = nlohmann::json::parse(r.out);
  EXPECT_EQ(a["devices"][2]["device"], "s3");
  EXPECT_EQ(a["devices"][2]["after"], "25.09-1");
  EXPECT_EQ(a["devices"][2]["pushed"], true);
  EXPECT_EQ(a["devices"][2]["component"], "BMC_Firmware");
  fs::remove(image);
}

TEST(OobCliListTest, AMissingCredentialIsExitTwoForTheDevicesThatNeedIt) {
  FleetCounters c;
  std::ostringstream out, err;
  OobCliOptions o;
  int code = runOobCli({"power", "status", "--bmc", "a=h1,b=h2", "--credential", "nope", "--protocol", "redfish"}, out,
                       err, o, [&](const OobCliOptions&) -> std::unique_ptr<PowerControl> {
                         class NoCredential final : public PowerControl {
                          public:
                           Result<PowerState> status(const BmcEndpoint& b) override {
                             return notFound("no BMC credential '" + b.credential + "'");
                           }
                           Status act(const BmcEndpoint&, PowerAction) override { return Ok{}; }
                         };
                         return std::make_unique<NoCredential>();
                       });
  EXPECT_EQ(code, 2) << err.str();
  const auto a = nlohmann::json::parse(out.str());
  EXPECT_EQ(a["failed"], nlohmann::json::array({"a", "b"}));
  EXPECT_NE(err.str().find("b: kiln-oob: power status h2:443: no BMC credential 'nope'"), std::string::npos)
      << err.str();
}

TEST(OobCliListTest, ACycleNotCompletedKeepsItsAnswerNextToTheError) {
  ScriptedPower p;
  p.states = {PowerState::kOn, PowerState::kOff};
  auto r = cli({"power", "cycle", "--bmc", "t1=10.0.0.7,t2=10.0.0.8", "--credential", "bmc-admin", "--wait", "1"}, &p);
  EXPECT_EQ(r.code, 1);
  const auto a = nlohmann::json::parse(r.out);
  EXPECT_EQ(a["failed"], nlohmann::json::array({"t1", "t2"}));
  EXPECT_EQ(a["devices"][0]["before"], "on");
  EXPECT_EQ(a["devices"][0]["power"], "off");
  EXPECT_EQ(a["devices"][1]["error"], "power cycle 10.0.0.8:623: still off after 1 s");
  EXPECT_NE(r.err.find("t1: kiln-oob: power cycle 10.0.0.7:623: still off after 1 s"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace kiln::oob
