// kiln-oob against a real IPMI 2.0 BMC (issue 32): OpenIPMI's ipmi_sim from Debian's openipmi,
// spoken to by the real ipmitool. The simulated tray's power is a file that ipmi_sim's
// chassis_control script sets and reads, with every change logged, so a test sees what the BMC
// was made to do. Label `exec`.

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
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

std::string readFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A UDP port nothing listens on now.
int freeUdpPort() {
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

struct OobRun {
  int code = -1;
  std::string out, err;
  std::chrono::milliseconds took{0};
};

class IpmiSimTest : public ::testing::Test {
 protected:
  static constexpr const char* kPassword = "Tr4y-s3cret-17";

  void SetUp() override {
    if (!fs::exists("/usr/bin/ipmi_sim") || !fs::exists("/usr/bin/ipmitool"))
      GTEST_FAIL() << "ipmi_sim (openipmi) and ipmitool are needed: deploy/lib/common.sh installs them";
    dir_ = fs::temp_directory_path() / ("kiln-ipmi-sim-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "state");
    port_ = freeUdpPort();
    const std::string d = dir_.string();
    {
      std::ofstream c(dir_ / "chassis.sh");
      c << "#!/bin/sh\n"
        << "# ipmi_sim's chassis_control: DIR get power | DIR set power \"1\"\n"
        << "dir=$1; shift\n"
        << "case \"$1\" in\n"
        << "  get) echo \"power:$(cat \"$dir/power\" 2>/dev/null || echo 1)\";;\n"
        << "  set) shift; while [ $# -gt 0 ]; do\n"
        << "         if [ \"$1\" = power ]; then v=$(echo \"$2\" | tr -d '\"'); echo \"$v\" > \"$dir/power\"; "
           "echo \"power $v\" >> \"$dir/power.log\"; fi\n"
        << "         shift 2; done;;\n"
        << "esac\n";
    }
    ::chmod((dir_ / "chassis.sh").c_str(), 0755);
    std::ofstream(dir_ / "lan.conf") << "name \"kilntray\"\n"
                                     << "set_working_mc 0x20\n"
                                     << "  startlan 1\n"
                                     << "    addr 127.0.0.1 " << port_ << "\n"
                                     << "    priv_limit admin\n"
                                     << "    allowed_auths_callback none md2 md5 straight\n"
                                     << "    allowed_auths_user none md2 md5 straight\n"
                                     << "    allowed_auths_operator none md2 md5 straight\n"
                                     << "    allowed_auths_admin none md2 md5 straight\n"
                                     << "    guid a123456789abcdefa123456789abcdef\n"
                                     << "  endlan\n"
                                     << "  chassis_control \"" << d << "/chassis.sh " << d << "\"\n"
                                     << "  user 2 true \"kiln\" \"" << kPassword
                                     << "\" admin 10 none md2 md5 straight\n";
    std::ofstream(dir_ / "tray.emu")
        << "mc_setbmc 0x20\n"
        << "mc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02 persist_sdr\n"
        << "sel_enable 0x20 1000 0x0a\n"
        // Two events the BMC logged before the test: a PSU went down.
        << "sel_add 0x20 0x02 0x00 0x00 0x00 0x00 0x20 0x00 0x04 0x01 0x30 0x01 0x09 0xff 0xff\n"
        << "sel_add 0x20 0x02 0x00 0x00 0x00 0x00 0x20 0x00 0x04 0x09 0x31 0x6f 0x00 0xff 0xff\n"
        << "mc_enable 0x20\n";
    writeCredentials(0600, kPassword);
    sim_ = std::make_unique<testing::ChildProcess>(
        std::vector<std::string>{"/usr/bin/ipmi_sim", "-c", d + "/lan.conf", "-f", d + "/tray.emu", "-s", d + "/state",
                                 "-n"},
        d + "/ipmi_sim.log", testing::ChildOptions{std::map<std::string, std::string>{{"PATH", "/usr/bin:/bin"}}});
    // Up once it answers a status through the real client.
    const auto until = std::chrono::steady_clock::now() + 15s;
    while (std::chrono::steady_clock::now() < until) {
      if (oob({"power", "status"}).code == 0) return;
      std::this_thread::sleep_for(100ms);
    }
    GTEST_FAIL() << "ipmi_sim did not answer on 127.0.0.1:" << port_ << "\n" << readFile(dir_ / "ipmi_sim.log");
  }

  void TearDown() override {
    if (sim_) sim_->stop(2s);
    if (HasFailure()) std::cerr << "---- ipmi_sim log:\n" << readFile(dir_ / "ipmi_sim.log");
    fs::remove_all(dir_);
  }

  void writeCredentials(mode_t mode, const std::string& password) {
    const auto path = dir_ / "bmc-credentials.json";
    std::ofstream(path) << nlohmann::json{{"tray", {{"user", "kiln"}, {"password", password}}}}.dump();
    ::chmod(path.c_str(), mode);
  }

  // kiln-oob with the test's BMC and credential file; `extra` after the verb.
  OobRun oob(std::vector<std::string> args, const std::vector<std::string>& extra = {}, int port = 0) {
    std::vector<std::string> argv = {KILN_OOB_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(),
                {"--bmc", "127.0.0.1:" + std::to_string(port ? port : port_), "--credential", "tray", "--credentials",
                 (dir_ / "bmc-credentials.json").string(), "--cipher-suite", "3", "--timeout", "10"});
    argv.insert(argv.end(), extra.begin(), extra.end());
    const auto out = dir_ / "oob.out", err = dir_ / "oob.err";
    OobRun r;
    const auto began = std::chrono::steady_clock::now();
    {
      testing::ChildProcess p(argv, err.string(),
                              testing::ChildOptions{std::map<std::string, std::string>{{"PATH", "/usr/bin:/bin"}}});
      r.code = p.waitExit(60s);
    }
    r.took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - began);
    // ChildProcess sends both streams to one log: the JSON answer is its first line, if any.
    const std::string all = readFile(err);
    fs::remove(err);
    std::istringstream lines(all);
    for (std::string line; std::getline(lines, line);) {
      if (!line.empty() && line.front() == '{')
        r.out = line;
      else
        r.err += line + "\n";
    }
    (void)out;
    return r;
  }

  std::string powerLog() { return readFile(dir_ / "power.log"); }

  fs::path dir_;
  int port_ = 0;
  std::unique_ptr<testing::ChildProcess> sim_;
};

TEST_F(IpmiSimTest, StatusOffOnAndACycleThroughTheRealIpmitool) {
  OobRun s = oob({"power", "status"});
  ASSERT_EQ(s.code, 0) << s.err;
  EXPECT_EQ(nlohmann::json::parse(s.out)["power"], "on");

  OobRun off = oob({"power", "off"}, {"--wait", "10"});
  ASSERT_EQ(off.code, 0) << off.err;
  auto j = nlohmann::json::parse(off.out);
  EXPECT_EQ(j["before"], "on");
  EXPECT_EQ(j["power"], "off");
  EXPECT_EQ(powerLog(), "power 0\n");
  EXPECT_EQ(nlohmann::json::parse(oob({"power", "status"}).out)["power"], "off");

  OobRun on = oob({"power", "on"}, {"--wait", "10"});
  ASSERT_EQ(on.code, 0) << on.err;
  EXPECT_EQ(nlohmann::json::parse(on.out)["power"], "on");

  // A cycle: the BMC turns the tray off, then on again by itself a second later.
  OobRun cycle = oob({"power", "cycle"}, {"--wait", "15"});
  ASSERT_EQ(cycle.code, 0) << cycle.err;
  j = nlohmann::json::parse(cycle.out);
  EXPECT_EQ(j["action"], "cycle");
  EXPECT_EQ(j["before"], "on");
  EXPECT_EQ(j["power"], "on");
  EXPECT_EQ(powerLog(), "power 0\npower 1\npower 0\npower 1\n");
}

// A recovery's evidence: the BMC's event log (the SEL) comes with the power cycle, through the
// real ipmitool, so nobody has to log into the BMC to see why the tray died.
TEST_F(IpmiSimTest, ThePowerCycleBringsTheBmcsEventLogWithIt) {
  OobRun cycle = oob({"power", "cycle"}, {"--wait", "15", "--log", "5"});
  ASSERT_EQ(cycle.code, 0) << cycle.err;
  const auto log = nlohmann::json::parse(cycle.out)["log"];
  ASSERT_EQ(log.size(), 2u) << cycle.out;
  EXPECT_NE(log[1]["message"].get<std::string>().find("Power Unit"), std::string::npos) << log.dump();
  OobRun last = oob({"log", "list"}, {"--last", "1"});
  ASSERT_EQ(last.code, 0) << last.err;
  EXPECT_EQ(nlohmann::json::parse(last.out)["log"].size(), 1u);
}

TEST_F(IpmiSimTest, AWrongPasswordFailsInBoundedTimeSaysWhatWasTriedAndShowsNoSecret) {
  writeCredentials(0600, "Wr0ng-guess-42");
  OobRun r = oob({"power", "cycle"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("refused user 'kiln' with cipher suite 3"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("Wr0ng-guess-42"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(kPassword), std::string::npos);
  EXPECT_TRUE(r.out.empty());
  EXPECT_LT(r.took, 30s);
  EXPECT_EQ(powerLog(), "") << "nothing was switched";
}

TEST_F(IpmiSimTest, ABmcThatDoesNotAnswerIsExitOneWithinTheTimeout) {
  OobRun r = oob({"power", "status"}, {"--timeout", "4"}, freeUdpPort());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("ipmitool 127.0.0.1:"), std::string::npos) << r.err;
  EXPECT_LT(r.took, 10s);
}

// The attacker's angle: a credential file other users can read is refused before any BMC is
// asked, and the password never appears on a command line (where `ps` shows it to everyone).
TEST_F(IpmiSimTest, ACredentialFileOthersCanReadIsRefusedAndThePasswordIsNeverInArgv) {
  writeCredentials(0644, kPassword);
  OobRun r = oob({"power", "off"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("mode 0644"), std::string::npos) << r.err;
  EXPECT_EQ(powerLog(), "");

  // An ipmitool that records how it was called, then does the real one's work.
  writeCredentials(0600, kPassword);
  const auto spy = dir_ / "ipmitool-spy.sh";
  std::ofstream(spy) << "#!/bin/sh\n"
                     << "echo \"argv: $*\" >> " << (dir_ / "spy.log").string() << "\n"
                     << "[ -n \"$IPMI_PASSWORD\" ] && echo \"env: IPMI_PASSWORD set\" >> "
                     << (dir_ / "spy.log").string() << "\n"
                     << "exec /usr/bin/ipmitool \"$@\"\n";
  ::chmod(spy.c_str(), 0755);
  std::vector<std::string> argv = {"/usr/bin/env",
                                   "KILN_IPMITOOL=" + spy.string(),
                                   KILN_OOB_BIN,
                                   "power",
                                   "status",
                                   "--bmc",
                                   "127.0.0.1:" + std::to_string(port_),
                                   "--credential",
                                   "tray",
                                   "--credentials",
                                   (dir_ / "bmc-credentials.json").string(),
                                   "--cipher-suite",
                                   "3"};
  testing::ChildProcess p(argv, (dir_ / "spy.out").string(),
                          testing::ChildOptions{std::map<std::string, std::string>{{"PATH", "/usr/bin:/bin"}}});
  ASSERT_EQ(p.waitExit(30s), 0) << readFile(dir_ / "spy.out");
  const std::string log = readFile(dir_ / "spy.log");
  EXPECT_NE(log.find("argv: -I lanplus -H 127.0.0.1"), std::string::npos) << log;
  EXPECT_NE(log.find("env: IPMI_PASSWORD set"), std::string::npos) << log;
  EXPECT_EQ(log.find(kPassword), std::string::npos) << log;
}

}  // namespace
}  // namespace kiln::oob
