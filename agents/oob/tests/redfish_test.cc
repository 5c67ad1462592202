// Redfish end to end (issue 32): kiln-hwsim's simulated tray BMC over HTTPS, checked with DMTF's
// real redfishtool (Debian's redfishtool) so that it speaks Redfish and not a dialect of ours,
// and kiln-oob's Redfish driver against it: power, a cycle, the firmware read-back, TLS checked
// against the site's CA, wrong credentials, a wedged BMC. Label `exec`.

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/child_process.h"

namespace kiln::oob {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using nlohmann::json;

std::string readFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Ran {
  int code = -1;
  std::string output;  // stdout and stderr together
  std::chrono::milliseconds took{0};
  // The first line that is a JSON object (kiln-oob's answer), or null.
  json answer() const {
    std::istringstream lines(output);
    for (std::string line; std::getline(lines, line);)
      if (!line.empty() && line.front() == '{') return json::parse(line, nullptr, false);
    return json();
  }
};

class RedfishTest : public ::testing::Test {
 protected:
  static constexpr const char* kPassword = "Tr4y-r3dfish-pw";

  void SetUp() override {
    if (!fs::exists("/usr/bin/redfishtool")) GTEST_FAIL() << "redfishtool is needed: deploy/lib/common.sh installs it";
    dir_ = fs::temp_directory_path() / ("kiln-redfish-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    // The site's CA is the BMC's own self-signed certificate, as a pinned certificate is.
    Ran cert =
        run({"/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", path("bmc.key"), "-out",
             path("bmc.pem"), "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"});
    ASSERT_EQ(cert.code, 0) << cert.output;
    std::ofstream(dir_ / "bmc-password") << kPassword << "\n";
    writeCredentials(kPassword);
  }

  void TearDown() override {
    if (bmc_) bmc_->stop(2s);
    if (HasFailure()) std::cerr << "---- BMC log:\n" << readFile(dir_ / "bmc.log");
    fs::remove_all(dir_);
  }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  void startBmc(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv = {KILN_HWSIM_BIN, "bmc",           "--listen",        "127.0.0.1:0",
                                     "--user",       "kiln",          "--password-file", path("bmc-password"),
                                     "--tray",       "t03",           "--tls-cert",      path("bmc.pem"),
                                     "--tls-key",    path("bmc.key"), "--port-file",     path("port")};
    argv.insert(argv.end(), extra.begin(), extra.end());
    bmc_ = std::make_unique<testing::ChildProcess>(argv, path("bmc.log"));
    const auto until = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < until && !fs::exists(dir_ / "port")) std::this_thread::sleep_for(20ms);
    ASSERT_TRUE(fs::exists(dir_ / "port")) << readFile(dir_ / "bmc.log");
    port_ = std::stoi(readFile(dir_ / "port"));
  }

  void writeCredentials(const std::string& password) {
    std::ofstream(dir_ / "creds.json") << json{{"tray", {{"user", "kiln"}, {"password", password}}}}.dump();
    ::chmod(path("creds.json").c_str(), 0600);
  }

  Ran run(const std::vector<std::string>& argv) {
    Ran r;
    const auto began = std::chrono::steady_clock::now();
    {
      testing::ChildProcess p(argv, path("run.out"),
                              testing::ChildOptions{std::map<std::string, std::string>{{"PATH", "/usr/bin:/bin"},
                                                                                       {"HOME", dir_.string()}}});
      r.code = p.waitExit(60s);
    }
    r.took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - began);
    r.output = readFile(dir_ / "run.out");
    fs::remove(dir_ / "run.out");
    return r;
  }

  Ran redfishtool(const std::vector<std::string>& args, const std::string& password = kPassword) {
    std::vector<std::string> argv = {"/usr/bin/redfishtool",
                                     "-r",
                                     "127.0.0.1:" + std::to_string(port_),
                                     "-u",
                                     "kiln",
                                     "-p",
                                     password,
                                     "-S",
                                     "Always"};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv);
  }

  Ran oob(const std::vector<std::string>& args, const std::vector<std::string>& extra = {"--ca", ""}) {
    std::vector<std::string> argv = {KILN_OOB_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"--bmc", "127.0.0.1:" + std::to_string(port_), "--credential", "tray", "--credentials",
                             path("creds.json"), "--protocol", "redfish", "--timeout", "10"});
    for (std::size_t i = 0; i < extra.size(); ++i) {
      argv.push_back(extra[i]);
      if (extra[i] == "--ca" && i + 1 < extra.size() && extra[i + 1].empty()) {
        argv.push_back(path("bmc.pem"));
        ++i;
      }
    }
    return run(argv);
  }

  fs::path dir_;
  int port_ = 0;
  std::unique_ptr<testing::ChildProcess> bmc_;
};

// The simulator speaks Redfish as DMTF's own client reads and drives it.
TEST_F(RedfishTest, DmtfsRedfishtoolReadsTheBmcAndPowerCyclesTheTray) {
  startBmc();
  Ran root = redfishtool({"root"});
  ASSERT_EQ(root.code, 0) << root.output;
  EXPECT_NE(root.output.find("\"RedfishVersion\""), std::string::npos) << root.output;
  Ran system = redfishtool({"Systems", "-I", "System_0", "get"});
  ASSERT_EQ(system.code, 0) << system.output;
  EXPECT_NE(system.output.find("\"PowerState\": \"On\""), std::string::npos) << system.output;
  Ran cycle = redfishtool({"Systems", "-I", "System_0", "reset", "PowerCycle"});
  ASSERT_EQ(cycle.code, 0) << cycle.output;
  EXPECT_NE(readFile(dir_ / "bmc.log").find("reset PowerCycle"), std::string::npos);
  Ran session = redfishtool({"-A", "Session", "Systems", "-I", "System_0", "get"});
  EXPECT_EQ(session.code, 0) << session.output;
  Ran wrong = redfishtool({"Systems"}, "not-the-password");
  EXPECT_NE(wrong.code, 0);
  EXPECT_NE(wrong.output.find("401"), std::string::npos) << wrong.output;
}

TEST_F(RedfishTest, KilnOobReadsPowerCyclesAndReadsTheFirmwareBackOverVerifiedTls) {
  startBmc({"--firmware", "BMC_Firmware=25.06-2", "--firmware", "HMC_Firmware=GB200-P4975_0004_250301.1.0"});
  Ran s = oob({"power", "status"});
  ASSERT_EQ(s.code, 0) << s.output;
  EXPECT_EQ(s.answer()["power"], "on");
  Ran cycle = oob({"power", "cycle"}, {"--ca", "", "--wait", "10"});
  ASSERT_EQ(cycle.code, 0) << cycle.output;
  EXPECT_EQ(cycle.answer()["before"], "on");
  EXPECT_EQ(cycle.answer()["power"], "on");
  EXPECT_NE(readFile(dir_ / "bmc.log").find("reset PowerCycle"), std::string::npos);
  // The BMC's event log, as a recovery's step would carry it.
  Ran log = oob({"log", "list"}, {"--ca", "", "--last", "1"});
  ASSERT_EQ(log.code, 0) << log.output;
  ASSERT_EQ(log.answer()["log"].size(), 1u) << log.output;
  EXPECT_EQ(log.answer()["log"][0]["message"], "ComputerSystem.Reset PowerCycle requested");
  Ran off = oob({"power", "off"}, {"--ca", "", "--wait", "5", "--log", "10"});
  ASSERT_EQ(off.code, 0) << off.output;
  EXPECT_EQ(off.answer()["power"], "off");
  EXPECT_EQ(off.answer()["log"].back()["message"], "ComputerSystem.Reset ForceOff requested");
  Ran fw = oob({"firmware", "list"});
  ASSERT_EQ(fw.code, 0) << fw.output;
  const json items = fw.answer()["firmware"];
  ASSERT_EQ(items.size(), 2u) << fw.output;
  EXPECT_EQ(items[0]["id"], "BMC_Firmware");
  EXPECT_EQ(items[0]["version"], "25.06-2");
  EXPECT_EQ(items[1]["version"], "GB200-P4975_0004_250301.1.0");
}

// An NVL72 pod's switch trays in one step: a device list, each tray behind its own BMC, read
// by the real kiln-oob in one answer, in the list's order.
TEST_F(RedfishTest, KilnOobReadsTheFirmwareOfADeviceListOfBmcsInOneAnswer) {
  startBmc({"--firmware", "BMC_Firmware=25.06-2"});
  const int first = port_;
  testing::ChildProcess second({KILN_HWSIM_BIN, "bmc", "--listen", "127.0.0.1:0", "--user", "kiln", "--password-file",
                                path("bmc-password"), "--tray", "t04", "--tls-cert", path("bmc.pem"), "--tls-key",
                                path("bmc.key"), "--port-file", path("port2"), "--firmware", "BMC_Firmware=25.09-1"},
                               path("bmc2.log"));
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < until && !fs::exists(dir_ / "port2")) std::this_thread::sleep_for(20ms);
  ASSERT_TRUE(fs::exists(dir_ / "port2")) << readFile(dir_ / "bmc2.log");
  const int other = std::stoi(readFile(dir_ / "port2"));
  Ran fw = run({KILN_OOB_BIN, "firmware", "list", "--bmc",
                "s1=127.0.0.1:" + std::to_string(first) + ",s2=127.0.0.1:" + std::to_string(other), "--credential",
                "tray", "--credentials", path("creds.json"), "--protocol", "redfish", "--timeout", "10", "--ca",
                path("bmc.pem"), "--parallel", "2"});
  second.stop(2s);
  ASSERT_EQ(fw.code, 0) << fw.output;
  const json a = fw.answer();
  EXPECT_EQ(a["failed"], json::array()) << fw.output;
  ASSERT_EQ(a["devices"].size(), 2u) << fw.output;
  EXPECT_EQ(a["devices"][0]["device"], "s1");
  EXPECT_EQ(a["devices"][0]["bmc"], "127.0.0.1:" + std::to_string(first));
  EXPECT_EQ(a["devices"][0]["firmware"][0]["id"], "BMC_Firmware");
  EXPECT_EQ(a["devices"][0]["firmware"][0]["version"], "25.06-2");
  EXPECT_EQ(a["devices"][1]["device"], "s2");
  EXPECT_EQ(a["devices"][1]["bmc"], "127.0.0.1:" + std::to_string(other));
  EXPECT_EQ(a["devices"][1]["firmware"][0]["version"], "25.09-1");
}

// The password crosses the wire once per run: kiln-oob logs into a Redfish session, asks with its
// X-Auth-Token, and logs out at the end; --auth basic sends the password with every request.
TEST_F(RedfishTest, KilnOobLogsInOnceAsksWithTheSessionAndLogsOut) {
  startBmc();
  Ran cycle = oob({"power", "cycle"}, {"--ca", "", "--wait", "10"});
  ASSERT_EQ(cycle.code, 0) << cycle.output;
  std::string log = readFile(dir_ / "bmc.log");
  EXPECT_NE(log.find("sessions made 1, open 1"), std::string::npos) << log;
  EXPECT_NE(log.find("sessions made 1, open 0"), std::string::npos) << log;
  EXPECT_EQ(log.find("sessions made 2"), std::string::npos) << "one session for the whole run: " << log;
  Ran basic = oob({"power", "status"}, {"--ca", "", "--auth", "basic"});
  ASSERT_EQ(basic.code, 0) << basic.output;
  EXPECT_EQ(readFile(dir_ / "bmc.log").find("sessions made 2"), std::string::npos);
}

// The attacker's angle: a BMC (or something in its place) whose certificate the site's CA does
// not vouch for is not talked to, unless the operator says --insecure, which is said every time.
TEST_F(RedfishTest, AnUnverifiedCertificateIsRefusedUnlessInsecureIsAskedForAndSaid) {
  startBmc();
  Ran r = oob({"power", "off"}, {});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.output.find("certificate"), std::string::npos) << r.output;
  EXPECT_EQ(readFile(dir_ / "bmc.log").find("reset"), std::string::npos) << "nothing was switched";
  Ran insecure = oob({"power", "status"}, {"--insecure"});
  EXPECT_EQ(insecure.code, 0) << insecure.output;
  EXPECT_NE(insecure.output.find("warning: --insecure"), std::string::npos) << insecure.output;
}

TEST_F(RedfishTest, AWrongPasswordAndAWedgedBmcAreClearErrorsAndShowNoSecret) {
  startBmc({"--fault", "reset-ignored"});
  writeCredentials("Wr0ng-guess-99");
  Ran wrong = oob({"power", "cycle"});
  EXPECT_EQ(wrong.code, 1);
  EXPECT_NE(wrong.output.find("HTTP 401: the BMC refused user 'kiln'"), std::string::npos) << wrong.output;
  EXPECT_EQ(wrong.output.find("Wr0ng-guess-99"), std::string::npos);
  EXPECT_LT(wrong.took, 10s);
  // The BMC takes the ForceOff and the tray stays on: --wait bounds it and says what it saw.
  writeCredentials(kPassword);
  Ran wedged = oob({"power", "off"}, {"--ca", "", "--wait", "2"});
  EXPECT_EQ(wedged.code, 1);
  EXPECT_NE(wedged.output.find("still on after 2 s"), std::string::npos) << wedged.output;
}

// Issue 32: a firmware update through the BMC's UpdateService: only verified bits are pushed,
// the Task is followed to its end, the version is read back from the device, and an update is
// never pushed twice. A hung Task and a BMC that does not apply the image are bounded errors.
TEST_F(RedfishTest, AFirmwareUpdatePushesVerifiedBitsFollowsTheTaskAndReadsTheVersionBack) {
  startBmc();
  const std::string image = path("bmc.fwpkg");
  std::ofstream(image) << "KILN-HWSIM-FW BMC_Firmware 25.09-1\n" << std::string(300000, 'x');
  Ran sha = run({"/usr/bin/sha256sum", image});
  const std::string digest = sha.output.substr(0, 64);
  auto update = [&](const std::string& hash, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> e = {"--ca",     "",   "--component", "BMC_Firmware", "--image", image,
                                  "--sha256", hash, "--version",   "25.09-1",      "--wait",  "20"};
    e.insert(e.end(), extra.begin(), extra.end());
    return oob({"firmware", "update"}, e);
  };
  // Bits that are not the ones the step was given never reach the BMC.
  Ran tampered = update(std::string(64, 'a'));
  EXPECT_EQ(tampered.code, 2);
  EXPECT_NE(tampered.output.find("only verified bits reach a BMC"), std::string::npos) << tampered.output;
  EXPECT_EQ(readFile(dir_ / "bmc.log").find("update pushed"), std::string::npos);

  Ran done = update(digest);
  ASSERT_EQ(done.code, 0) << done.output;
  const json a = done.answer();
  EXPECT_EQ(a["before"], "25.06-2");
  EXPECT_EQ(a["after"], "25.09-1");
  EXPECT_EQ(a["pushed"], true);
  EXPECT_EQ(a["task_state"], "Completed");
  EXPECT_NE(readFile(dir_ / "bmc.log").find("update pushed (1 so far)"), std::string::npos);
  // Run again (a retried step): the device already reports the version, nothing is pushed.
  Ran again = update(digest);
  ASSERT_EQ(again.code, 0) << again.output;
  EXPECT_EQ(again.answer()["pushed"], false);
  EXPECT_EQ(readFile(dir_ / "bmc.log").find("update pushed (2"), std::string::npos);
}

// The rack recipe's "BMC first and reset": Manager.Reset restarts the BMC (the tray stays on);
// kiln-oob waits out its absence, logs in again and reads the version it runs. DMTF's
// redfishtool resets it the same way.
TEST_F(RedfishTest, ABmcResetWaitsForTheBmcToAnswerAgainAndReadsItsVersion) {
  startBmc({"--firmware", "BMC_Firmware=25.09-1"});
  Ran reset = oob({"bmc", "reset"}, {"--ca", "", "--wait", "20"});
  ASSERT_EQ(reset.code, 0) << reset.output;
  EXPECT_EQ(reset.answer()["action"], "bmc-reset");
  EXPECT_EQ(reset.answer()["firmware_version"], "25.09-1");
  const std::string log = readFile(dir_ / "bmc.log");
  EXPECT_NE(log.find("manager reset (1 so far)"), std::string::npos) << log;
  EXPECT_NE(log.find("sessions made 2"), std::string::npos) << "the session died with the BMC: " << log;
  EXPECT_EQ(log.find("reset PowerCycle"), std::string::npos) << "the tray's power is untouched";
  Ran power = oob({"power", "status"});
  ASSERT_EQ(power.code, 0) << power.output;
  EXPECT_EQ(power.answer()["power"], "on");
  Ran tool = redfishtool({"Managers", "-I", "BMC_0", "reset", "ForceRestart"});
  EXPECT_EQ(tool.code, 0) << tool.output;
  EXPECT_NE(readFile(dir_ / "bmc.log").find("manager reset (2 so far)"), std::string::npos) << readFile(dir_ / "bmc.log");
  // IPMI has no Manager.Reset in kiln-oob: a usage error, nothing asked.
  Ran ipmi = oob({"bmc", "reset"}, {"--protocol", "ipmi"});
  EXPECT_EQ(ipmi.code, 2) << ipmi.output;
}

TEST_F(RedfishTest, AHungTaskAndAnImageTheBmcDidNotApplyAreBoundedErrors) {
  for (const std::string fault : {"task-hangs", "version-unchanged"}) {
    if (bmc_) bmc_->stop(2s);
    fs::remove(dir_ / "port");
    startBmc({"--fault", fault});
    const std::string image = path("cpld.fwpkg");
    std::ofstream(image) << "KILN-HWSIM-FW CPLD_0 0.2.0\n";
    const std::string digest = run({"/usr/bin/sha256sum", image}).output.substr(0, 64);
    Ran r = oob({"firmware", "update"}, {"--ca", "", "--component", "CPLD_0", "--image", image, "--sha256", digest,
                                         "--version", "0.2.0", "--wait", "3"});
    EXPECT_EQ(r.code, 1) << fault << ": " << r.output;
    if (fault == "task-hangs") {
      EXPECT_NE(r.output.find("is still Running at 42% after 3 s"), std::string::npos) << r.output;
      EXPECT_LT(r.took, 15s);
    } else {
      EXPECT_NE(r.output.find("reports CPLD_0 0.1.0c after a completed update to 0.2.0"), std::string::npos)
          << r.output;
    }
  }
}

}  // namespace
}  // namespace kiln::oob
