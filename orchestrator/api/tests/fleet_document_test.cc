// The fleet document's decoder (fleet_document.h): versions inherited innermost-first, every bad
// field named by its path, and what `kilnctl fleet generate` writes accepted.

#include "orchestrator/api/fleet_document.h"

#include <map>

#include <gtest/gtest.h>

#include "orchestrator/core/fleet_generator.h"

namespace kiln::api {
namespace {

using core::HostState;
using core::Platform;
using nlohmann::json;

json validFleet() {
  return json::parse(R"({
    "versions": {"driver": "570.1", "bmc": "1.0"},
    "sites": [{"name": "prn", "versions": {"bmc": "1.1"}, "buildings": [
      {"name": "prn-b01", "pods": [
        {"name": "p1", "platform": "clemente", "labels": {"row": "a"}},
        {"name": "p2", "platform": "catalina", "state": "incoming", "versions": {"driver": "580.2"}}
      ]}]}]})");
}

TEST(FleetDocumentTest, ParsesAndInheritsVersionsInnermostWins) {
  auto fleet = parseFleetSpec(validFleet());
  ASSERT_TRUE(fleet.ok()) << fleet.error();
  ASSERT_EQ(fleet->pods.size(), 2u);
  EXPECT_EQ(fleet->pods[0].versions.at("driver"), "570.1");
  EXPECT_EQ(fleet->pods[0].versions.at("bmc"), "1.1");
  EXPECT_EQ(fleet->pods[1].versions.at("driver"), "580.2");
  EXPECT_EQ(fleet->pods[1].initial_state, HostState::kIncoming);
  EXPECT_EQ(fleet->pods[1].platform, Platform::kCatalina);
  EXPECT_EQ(fleet->pods[0].building, "prn-b01");
  EXPECT_EQ(fleet->pods[0].site, "prn");
}

// Issue 32: management endpoints inherit field by field, innermost first, like versions.
TEST(FleetDocumentTest, ManagementTemplatesInheritFieldByFieldInnermostWins) {
  json doc = validFleet();
  doc["management"] = {{"protocol", "redfish"}, {"credential", "fleet-bmc"}, {"tray_bmc", "{host}-bmc.mgmt.example"}};
  doc["sites"][0]["buildings"][0]["management"] = {{"switch_bmc", "{switch}-bmc.mgmt.example"}};
  doc["sites"][0]["buildings"][0]["pods"][1]["management"] = {{"credential", "p2-bmc"}, {"protocol", "ipmi"}};
  auto fleet = parseFleetSpec(doc);
  ASSERT_TRUE(fleet.ok()) << fleet.error();
  const auto& p1 = fleet->pods[0].management;
  EXPECT_EQ(p1.protocol, "redfish");
  EXPECT_EQ(p1.credential, "fleet-bmc");
  EXPECT_EQ(p1.tray_bmc, "{host}-bmc.mgmt.example");
  EXPECT_EQ(p1.switch_bmc, "{switch}-bmc.mgmt.example");
  const auto& p2 = fleet->pods[1].management;
  EXPECT_EQ(p2.protocol, "ipmi");
  EXPECT_EQ(p2.credential, "p2-bmc");
  EXPECT_EQ(p2.tray_bmc, "{host}-bmc.mgmt.example");
  // A fleet without management has none.
  auto plain = parseFleetSpec(validFleet());
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(plain->pods[0].management.empty());
}

// The attacker's (or the careless admin's) angle: a secret in the fleet file is refused with a
// message that says where secrets go, and the secret itself is not repeated.
TEST(FleetDocumentTest, ASecretInAManagementBlockIsRefusedAndNotRepeated) {
  json doc = validFleet();
  doc["sites"][0]["management"] = {{"protocol", "redfish"},
                                   {"credential", "tray-bmc"},
                                   {"tray_bmc", "{host}-bmc"},
                                   {"password", "hunter2-bmc"},
                                   {"user", "admin"}};
  doc["sites"][0]["buildings"][0]["pods"][0]["management"] = {{"tray_bmc", "{hots}-bmc"}};
  auto fleet = parseFleetSpec(doc);
  ASSERT_FALSE(fleet.ok());
  std::map<std::string, std::string> by_path;
  for (const auto& f : fleet.error().fields) by_path[f.path] = f.message;
  ASSERT_TRUE(by_path.count("sites[0].management.password")) << fleet.error();
  EXPECT_NE(by_path["sites[0].management.password"].find("secrets are not imported"), std::string::npos);
  EXPECT_TRUE(by_path.count("sites[0].management.user"));
  EXPECT_NE(by_path["sites[0].buildings[0].pods[0].management.tray_bmc"].find("unknown placeholder {hots}"),
            std::string::npos);
  EXPECT_EQ(fleet.error().message.find("hunter2"), std::string::npos);
  for (const auto& f : fleet.error().fields) EXPECT_EQ(f.message.find("hunter2"), std::string::npos);
}

TEST(FleetDocumentTest, ReportsThePathOfEveryBadField) {
  json doc = validFleet();
  auto& pods = doc["sites"][0]["buildings"][0]["pods"];
  pods[0]["platform"] = "dgx";
  pods[1]["name"] = "p1";                     // duplicate
  pods[1]["colour"] = "red";                  // unknown key
  doc["sites"][0]["versions"]["bios"] = "x";  // unknown component
  auto fleet = parseFleetSpec(doc);
  ASSERT_FALSE(fleet.ok());
  EXPECT_EQ(fleet.error().code, ErrorCode::kInvalidContent);
  std::vector<std::string> paths;
  for (const auto& f : fleet.error().fields) paths.push_back(f.path);
  EXPECT_EQ(paths, (std::vector<std::string>{
                       "sites[0].versions.bios",
                       "sites[0].buildings[0].pods[0].platform",
                       "sites[0].buildings[0].pods[1].colour",
                       "sites[0].buildings[0].pods[1].name",
                   }));
  EXPECT_EQ(fleet.error().message,
            "fleet file is invalid: 4 problem(s), first: sites[0].versions.bios: unknown component (expected "
            "gpu_vbios, hmc_bundle, nic, bmc, sbios, driver or nvswitch)");
}

TEST(FleetDocumentTest, CountsEveryProblemButNamesAtMostTheFirst200) {
  json doc = validFleet();
  auto& pods = doc["sites"][0]["buildings"][0]["pods"];
  for (int i = 0; i < 250; ++i) pods.push_back({{"name", "x" + std::to_string(i)}, {"platform", "dgx"}});
  auto fleet = parseFleetSpec(doc);
  ASSERT_FALSE(fleet.ok());
  EXPECT_EQ(fleet.error().fields.size(), kMaxFieldErrors);
  EXPECT_NE(fleet.error().message.find("250 problem(s)"), std::string::npos) << fleet.error().message;
}

TEST(FleetDocumentTest, RejectsWrongShapes) {
  EXPECT_FALSE(parseFleetSpec(json::array()).ok());
  EXPECT_FALSE(parseFleetSpec(json::parse(R"({"sites": []})")).ok());
  EXPECT_FALSE(parseFleetSpec(json::parse(R"({"sites": {"a": 1}})")).ok());
  auto missing = parseFleetSpec(json::parse(R"({"sites": [{"buildings": []}]})"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().fields[0].path, "sites[0].name");
}

TEST(FleetGeneratorTest, MillionGpuFleetHas13889PodsInBuildingsOfAtMost20736Gpus) {
  auto doc = core::generateFleet({.gpus = 1'000'000});
  auto fleet = parseFleetSpec(doc);
  ASSERT_TRUE(fleet.ok()) << fleet.error();
  EXPECT_EQ(fleet->pods.size(), 13889u);  // 1,000,008 GPUs
  std::map<std::string, int> per_building;
  int clemente = 0;
  for (const auto& p : fleet->pods) {
    ++per_building[p.building];
    clemente += p.platform == Platform::kClemente;
  }
  for (const auto& [b, n] : per_building) EXPECT_LE(n * 72, 20736) << b;
  EXPECT_EQ(per_building.size(), 49u);
  EXPECT_NEAR(clemente, 13889 / 2, 2);
}

}  // namespace
}  // namespace kiln::api
