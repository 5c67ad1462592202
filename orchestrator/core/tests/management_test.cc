// A pod's management endpoints from its templates (issue 32): expansion per device, ports,
// inheritance, and what a block may not hold.

#include <map>

#include <gtest/gtest.h>

#include "orchestrator/core/management.h"

namespace kiln::core {
namespace {

ManagementSpec spec() {
  ManagementSpec m;
  m.protocol = "redfish";
  m.credential = "tray-bmc";
  m.tray_bmc = "{host}-bmc.mgmt.prn.example";
  m.switch_bmc = "{pod}-sw{tray}.mgmt.prn.example:8443";
  return m;
}

TEST(ManagementTest, EachDeviceGetsItsOwnEndpointFromThePodsTemplates) {
  const ManagementSpec m = spec();
  EXPECT_TRUE(validateManagement(m).empty());
  auto t = trayBmcOf(m, "prn-b01-p0001-h03", "prn-b01-p0001", "prn-b01-p0001-r1", 3);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->address, "prn-b01-p0001-h03-bmc.mgmt.prn.example");
  EXPECT_EQ(t->port, 443);
  EXPECT_EQ(t->protocol, "redfish");
  EXPECT_EQ(t->credential, "tray-bmc");
  auto s = switchBmcOf(m, "prn-b01-p0001-s4", "prn-b01-p0001", "prn-b01-p0001-r1", 4);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->address, "prn-b01-p0001-sw4.mgmt.prn.example");
  EXPECT_EQ(s->port, 8443);
  ManagementSpec ipmi = m;
  ipmi.protocol = "ipmi";
  ipmi.tray_bmc = "[fd00::{tray}]";
  auto v6 = trayBmcOf(ipmi, "h", "p", "r", 7);
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->address, "fd00::7");
  EXPECT_EQ(v6->port, 623);
  EXPECT_FALSE(trayBmcOf(ManagementSpec{}, "h", "p", "r", 1));
}

TEST(ManagementTest, AnInnerLevelOverridesFieldByFieldAndKeepsTheRest) {
  ManagementSpec pod;
  pod.credential = "pod-7-bmc";
  const ManagementSpec m = inheritManagement(pod, spec());
  EXPECT_EQ(m.credential, "pod-7-bmc");
  EXPECT_EQ(m.protocol, "redfish");
  EXPECT_EQ(m.tray_bmc, spec().tray_bmc);
}

TEST(ManagementTest, ABlockThatIsNotAnAddressTemplateOrNamesASecretIsRefused) {
  auto errors = [](ManagementSpec m) {
    std::vector<std::string> out;
    for (const auto& [f, msg] : validateManagement(m)) out.push_back(f + ": " + msg);
    return out;
  };
  ManagementSpec m = spec();
  m.protocol = "telnet";
  EXPECT_EQ(errors(m).size(), 1u);
  m = spec();
  m.credential = "hunter2 with spaces";
  ASSERT_EQ(errors(m).size(), 1u);
  EXPECT_NE(errors(m)[0].find("not a secret"), std::string::npos);
  for (const char* bad : {"{hots}-bmc", "-oProxy{host}", "{host} bmc", "{host", "a/b{host}", "{host}:0", "{host}:99999",
                          "fd00::{tray}"}) {
    m = spec();
    m.tray_bmc = bad;
    EXPECT_EQ(errors(m).size(), 1u) << bad;
  }
  m = spec();
  m.tray_bmc.clear();
  m.switch_bmc.clear();
  EXPECT_EQ(errors(m).size(), 1u);
  EXPECT_TRUE(secretLikeKey("password"));
  EXPECT_TRUE(secretLikeKey("BMC_Password"));
  EXPECT_TRUE(secretLikeKey("user"));
  for (const auto& k : managementKeys()) EXPECT_FALSE(secretLikeKey(k)) << k;
}

// Issue 32: the runner that reaches the pod's BMCs is inherited like the rest and must be a
// runner's name; a BMC's address reaches kiln-oob as HOST:PORT.
TEST(ManagementTest, TheRunnerIsInheritedAndMustBeAName) {
  ManagementSpec building = spec();
  building.runner = "oob-b01";
  ManagementSpec pod;
  pod.tray_bmc = "10.1.{tray}.2";
  EXPECT_EQ(inheritManagement(pod, building).runner, "oob-b01");
  pod.runner = "oob-b01-east";
  EXPECT_EQ(inheritManagement(pod, building).runner, "oob-b01-east");
  EXPECT_TRUE(validateManagement(building).empty());
  ManagementSpec bad = building;
  bad.runner = "runner:oob";
  auto errors = validateManagement(bad);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].first, "runner");
  EXPECT_EQ(bmcArgument({"10.1.3.2", 443, "redfish", "tray-bmc"}), "10.1.3.2:443");
  EXPECT_EQ(bmcArgument({"fd00::7", 623, "ipmi", "tray-bmc"}), "[fd00::7]:623");
}

// Several runners for one pod: a rack upgrade's BMC steps run side by side, each tray's always
// on the same runner (its recovery too), the same answer from every kilnd.
TEST(ManagementTest, SeveralRunnersShareAPodsTraysAndEachTrayKeepsItsRunner) {
  ManagementSpec m = spec();
  m.runner = "oob-b01a,oob-b01b,oob-b01c";
  EXPECT_TRUE(validateManagement(m).empty());
  EXPECT_EQ(runnersOf(m), (std::vector<std::string>{"oob-b01a", "oob-b01b", "oob-b01c"}));
  std::map<std::string, int> trays;
  for (int t = 1; t <= 18; ++t)
    ++trays[runnerFor(m, "prn-b01-p0001-h" + std::string(t < 10 ? "0" : "") + std::to_string(t))];
  ASSERT_EQ(trays.size(), 3u) << "the 18 trays are spread over all three runners";
  for (const auto& [runner, n] : trays) EXPECT_GE(n, 3) << runner;
  // FNV-1a of the id, pinned: every kilnd, of any build, sends a tray to the same runner (a
  // std::hash would not promise that).
  // (Values from an independent FNV-1a, 64 bits, of the id modulo 3.)
  EXPECT_EQ(runnerFor(m, "prn-b01-p0001-h01"), "oob-b01a");
  EXPECT_EQ(runnerFor(m, "prn-b01-p0001-h03"), "oob-b01b");
  EXPECT_EQ(runnerFor(m, "prn-b01-p0001-h05"), "oob-b01c");
  m.runner = "oob-b01";
  EXPECT_EQ(runnerFor(m, "anything"), "oob-b01");
  m.runner = "";
  EXPECT_EQ(runnerFor(m, "anything"), "");
  EXPECT_TRUE(runnersOf(m).empty());

  for (const char* bad : {"oob-a,oob-a", "oob-a,,oob-b", "oob-a,", ",oob-a", "oob-a,runner:x", "oob a"}) {
    ManagementSpec b = spec();
    b.runner = bad;
    auto errors = validateManagement(b);
    ASSERT_EQ(errors.size(), 1u) << bad;
    EXPECT_EQ(errors[0].first, "runner") << bad;
  }
  ManagementSpec many = spec();
  for (int i = 0; i < 17; ++i) many.runner += (i ? ",r" : "r") + std::to_string(i);
  EXPECT_FALSE(validateManagement(many).empty()) << "at most 16";
}

}  // namespace
}  // namespace kiln::core
