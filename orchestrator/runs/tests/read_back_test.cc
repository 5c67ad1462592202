// What a read-back step's output may say of which devices (orchestrator/runs/read_back.h): the
// host's own BMC, or the switch trays of its pod, each by its own answer. The attacker's angle:
// an output that speaks for another pod's switch tray records nothing at all.

#include "orchestrator/runs/read_back.h"

#include <gtest/gtest.h>

namespace kiln::runs {
namespace {

using nlohmann::json;
using workflow::StepSpec;
using workflow::Target;

const std::string kPod = "p1-s1=p1-s1-bmc:443,p1-s2=p1-s2-bmc:443,p1-s3=[fd00::3]:443";

StepSpec step(Target target, std::map<std::string, std::string> inventory) {
  StepSpec s;
  s.id = "read-back";
  s.target = target;
  s.parse = "json";
  s.inventory = std::move(inventory);
  return s;
}

json tray(const std::string& name, const std::string& version) {
  return {{"device", name},
          {"bmc", name + "-bmc:443"},
          {"firmware", json::array({{{"id", "BMC_Firmware"}, {"version", "88.0002"}},
                                    {{"id", "NVSwitch_Firmware"}, {"version", version}}})}};
}

TEST(DeviceListNamesTest, NamesComeInOrderAndAnIpv6AddressDoesNotSplitThem) {
  EXPECT_EQ(deviceListNames(kPod), (std::vector<std::string>{"p1-s1", "p1-s2", "p1-s3"}));
  EXPECT_TRUE(deviceListNames("").empty());
  EXPECT_EQ(deviceListNames("a=x,,=y,b=z"), (std::vector<std::string>{"a", "b"}));
}

TEST(ReadBackTest, AStepWithoutInventoryRecordsNothing) {
  StepSpec s = step(Target::kBmc, {});
  auto r = readBack(s, "p1-h01", kPod, json{{"firmware", json::array()}});
  EXPECT_TRUE(r.versions.empty());
  EXPECT_TRUE(r.error.empty());
}

TEST(ReadBackTest, AHostsOwnBmcReadsBackItsKindsAsTheHostsVersions) {
  auto r = readBack(step(Target::kBmc, {{"bmc", "BMC_Firmware"}, {"sbios", "SBIOS"}}), "p1-h01", kPod,
                    json{{"bmc", "p1-h01-bmc:443"},
                         {"firmware", json::array({{{"id", "BMC_Firmware"}, {"version", "25.06-4"}},
                                                   {{"id", "SBIOS"}, {"version", "02.04.01"}}})}});
  EXPECT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(r.versions, (std::vector<DeviceVersion>{{"p1-h01", "bmc", "25.06-4", "p1-h01"},
                                                    {"p1-h01", "sbios", "02.04.01", "p1-h01"}}));
}

TEST(ReadBackTest, AMemberTheBmcDoesNotReportOrReportsWithoutAVersionFailsTheStepAndTheRestIsKept) {
  auto r = readBack(step(Target::kBmc, {{"bmc", "BMC_Firmware"}, {"sbios", "SBIOS"}}), "p1-h01", kPod,
                    json{{"firmware", json::array({{{"id", "BMC_Firmware"}, {"version", ""}},
                                                   {{"id", "SBIOS"}, {"version", "02.04.01"}}})}});
  EXPECT_EQ(r.error, "the BMC read back no version of bmc (BMC_Firmware)");
  EXPECT_EQ(r.versions, (std::vector<DeviceVersion>{{"p1-h01", "sbios", "02.04.01", "p1-h01"}}));
  EXPECT_FALSE(readBack(step(Target::kBmc, {{"bmc", "BMC_Firmware"}}), "p1-h01", kPod, json::array()).error.empty());
}

TEST(ReadBackTest, EverySwitchTrayOfThePodIsRecordedByItsOwnAnswer) {
  auto r =
      readBack(step(Target::kSwitchTrays, {{"nvswitch", "NVSwitch_Firmware"}}), "p1-h01", kPod,
               json{{"devices", json::array({tray("p1-s1", "1.4.0"), tray("p1-s2", "1.4.0"), tray("p1-s3", "1.3.0")})},
                    {"failed", json::array()}});
  EXPECT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(r.versions, (std::vector<DeviceVersion>{{"p1-s1", "nvswitch", "1.4.0", "p1-h01"},
                                                    {"p1-s2", "nvswitch", "1.4.0", "p1-h01"},
                                                    {"p1-s3", "nvswitch", "1.3.0", "p1-h01"}}))
      << "the tray still on 1.3.0 says so itself";
}

TEST(ReadBackTest, ASwitchTrayThatFailedOrIsMissingFailsTheStepNamingItAndTheOthersAreKept) {
  json failed = {{"device", "p1-s2"}, {"error", "connection refused"}};
  auto r = readBack(step(Target::kSwitchTrays, {{"nvswitch", "NVSwitch_Firmware"}}), "p1-h01", kPod,
                    json{{"devices", json::array({tray("p1-s1", "1.4.0"), failed})}});
  EXPECT_EQ(r.error, "no read-back of p1-s2, p1-s3");
  EXPECT_EQ(r.versions, (std::vector<DeviceVersion>{{"p1-s1", "nvswitch", "1.4.0", "p1-h01"}}));
}

TEST(ReadBackTest, AnOutputThatSpeaksForAnotherPodsSwitchTrayRecordsNothingAtAll) {
  // A runner's answer naming p2-s1 (not of this pod) next to this pod's own trays: none of it
  // is taken, so a confused or hostile runner cannot mark another pod's switch trays upgraded.
  auto r = readBack(step(Target::kSwitchTrays, {{"nvswitch", "NVSwitch_Firmware"}}), "p1-h01", kPod,
                    json{{"devices", json::array({tray("p1-s1", "1.4.0"), tray("p1-s2", "1.4.0"),
                                                  tray("p1-s3", "1.4.0"), tray("p2-s1", "1.4.0")})}});
  EXPECT_TRUE(r.versions.empty());
  EXPECT_NE(r.error.find("not switch trays of this pod: p2-s1"), std::string::npos) << r.error;
  // The same tray twice, or a device with no name, is no better.
  auto twice =
      readBack(step(Target::kSwitchTrays, {{"nvswitch", "NVSwitch_Firmware"}}), "p1-h01", kPod,
               json{{"devices", json::array({tray("p1-s1", "1.4.0"), tray("p1-s1", "1.3.0"), json{{"x", 1}}})}});
  EXPECT_TRUE(twice.versions.empty());
  EXPECT_NE(twice.error.find("p1-s1 (twice), (unnamed)"), std::string::npos) << twice.error;
}

TEST(ReadBackTest, AnAnswerWithoutADevicesListFailsTheSwitchTraysStep) {
  auto r = readBack(step(Target::kSwitchTrays, {{"nvswitch", "NVSwitch_Firmware"}}), "p1-h01", kPod,
                    json{{"firmware", json::array()}});
  EXPECT_TRUE(r.versions.empty());
  EXPECT_NE(r.error.find("no devices list"), std::string::npos);
  // A pod with no switch tray BMCs: every device named is foreign.
  auto none = readBack(step(Target::kSwitchTrays, {{"nvswitch", "NVSwitch_Firmware"}}), "p1-h01", "",
                       json{{"devices", json::array({tray("p1-s1", "1.4.0")})}});
  EXPECT_TRUE(none.versions.empty());
  EXPECT_FALSE(none.error.empty());
}

}  // namespace
}  // namespace kiln::runs
