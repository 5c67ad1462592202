// The simulated tray BMC's Redfish answers alone (issue 32): who may ask, what a reset does,
// sessions, a wedged BMC's ignored reset, and errors in Redfish's own shape.

#include <gtest/gtest.h>

#include "agents/sim/redfish_bmc.h"

namespace kiln::sim {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

const std::string kBasic = "Basic a2lsbjpUcjR5LXB3";  // kiln:Tr4y-pw

BmcConfig config() {
  BmcConfig c;
  c.user = "kiln";
  c.password = "Tr4y-pw";
  c.tray = "t03";
  return c;
}

BmcRequest get(const std::string& path, const std::string& auth = kBasic) {
  BmcRequest r{"GET", path, {}, ""};
  if (!auth.empty()) r.headers["authorization"] = auth;
  return r;
}

BmcRequest reset(const std::string& type) {
  BmcRequest r{"POST",
               "/redfish/v1/Systems/System_0/Actions/ComputerSystem.Reset",
               {{"authorization", kBasic}},
               json{{"ResetType", type}}.dump()};
  return r;
}

TEST(RedfishBmcTest, TheServiceRootIsOpenAndEverythingElseNeedsTheUsersPassword) {
  RedfishBmc bmc(config());
  const auto t = RedfishBmc::Clock::now();
  auto root = bmc.handle(get("/redfish/v1/", ""), t);
  EXPECT_EQ(root.status, 200);
  EXPECT_EQ(root.body["Systems"]["@odata.id"], "/redfish/v1/Systems");
  auto no = bmc.handle(get("/redfish/v1/Systems", ""), t);
  EXPECT_EQ(no.status, 401);
  EXPECT_EQ(no.body["error"]["code"], "Base.1.8.NoValidSession");
  EXPECT_EQ(bmc.handle(get("/redfish/v1/Systems", "Basic a2lsbjp3cm9uZw=="), t).status, 401);  // kiln:wrong
  auto systems = bmc.handle(get("/redfish/v1/Systems"), t);
  ASSERT_EQ(systems.status, 200);
  EXPECT_EQ(systems.body["Members"][0]["@odata.id"], "/redfish/v1/Systems/System_0");
}

TEST(RedfishBmcTest, APowerCycleTurnsTheTrayOffThenOnAgainAndForceOffStaysOff) {
  BmcConfig c = config();
  c.cycle_off = 1000ms;
  RedfishBmc bmc(c);
  const auto t = RedfishBmc::Clock::now();
  EXPECT_EQ(bmc.handle(get("/redfish/v1/Systems/System_0"), t).body["PowerState"], "On");
  EXPECT_EQ(bmc.handle(reset("PowerCycle"), t).status, 204);
  EXPECT_EQ(bmc.handle(get("/redfish/v1/Systems/System_0"), t + 500ms).body["PowerState"], "Off");
  EXPECT_EQ(bmc.handle(get("/redfish/v1/Systems/System_0"), t + 1500ms).body["PowerState"], "On");
  EXPECT_EQ(bmc.handle(reset("ForceOff"), t + 2s).status, 204);
  EXPECT_EQ(bmc.handle(get("/redfish/v1/Chassis/Chassis_0"), t + 10s).body["PowerState"], "Off");
  EXPECT_EQ(bmc.handle(reset("On"), t + 11s).status, 204);
  EXPECT_TRUE(bmc.poweredOn(t + 11s));
  EXPECT_EQ(bmc.powerLog(), (std::vector<std::string>{"PowerCycle", "ForceOff", "On"}));
  auto bad = bmc.handle(reset("Explode"), t + 12s);
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.body["error"]["code"], "Base.1.8.ActionParameterNotSupported");
  BmcRequest garbage = reset("On");
  garbage.body = "{not json";
  EXPECT_EQ(bmc.handle(garbage, t).status, 400);
}

TEST(RedfishBmcTest, AWedgedBmcAcceptsAResetAndDoesNothing) {
  BmcConfig c = config();
  c.faults.insert("reset-ignored");
  RedfishBmc bmc(c);
  const auto t = RedfishBmc::Clock::now();
  EXPECT_EQ(bmc.handle(reset("ForceOff"), t).status, 204);
  EXPECT_TRUE(bmc.poweredOn(t + 10s));
}

TEST(RedfishBmcTest, ASessionTokenStandsForThePasswordUntilItIsDeleted) {
  RedfishBmc bmc(config());
  const auto t = RedfishBmc::Clock::now();
  BmcRequest login{
      "POST", "/redfish/v1/SessionService/Sessions", {}, json{{"UserName", "kiln"}, {"Password", "nope"}}.dump()};
  EXPECT_EQ(bmc.handle(login, t).status, 401);
  login.body = json{{"UserName", "kiln"}, {"Password", "Tr4y-pw"}}.dump();
  auto made = bmc.handle(login, t);
  ASSERT_EQ(made.status, 201);
  std::string token, location;
  for (const auto& [k, v] : made.headers) {
    if (k == "X-Auth-Token") token = v;
    if (k == "Location") location = v;
  }
  ASSERT_EQ(token.size(), 32u);
  BmcRequest withToken{"GET", "/redfish/v1/Systems/System_0", {{"x-auth-token", token}}, ""};
  EXPECT_EQ(bmc.handle(withToken, t).status, 200);
  BmcRequest logout{"DELETE", location, {{"x-auth-token", token}}, ""};
  EXPECT_EQ(bmc.handle(logout, t).status, 204);
  EXPECT_EQ(bmc.handle(withToken, t).status, 401);
}

// Manager.Reset: the BMC restarts (503 to everything for a while), forgets its sessions, and
// leaves the tray's power alone; an unknown ResetType is a 400.
TEST(RedfishBmcTest, ABmcResetMakesItAnswerNothingForAWhileAndForgetsItsSessions) {
  RedfishBmc bmc(config());
  const auto t = RedfishBmc::Clock::now();
  const json manager = bmc.handle(get("/redfish/v1/Managers/BMC_0"), t).body;
  ASSERT_EQ(manager["Actions"]["#Manager.Reset"]["target"], "/redfish/v1/Managers/BMC_0/Actions/Manager.Reset");
  BmcRequest login{
      "POST", "/redfish/v1/SessionService/Sessions", {}, json{{"UserName", "kiln"}, {"Password", "Tr4y-pw"}}.dump()};
  ASSERT_EQ(bmc.handle(login, t).status, 201);
  BmcRequest r{"POST", "/redfish/v1/Managers/BMC_0/Actions/Manager.Reset", {{"authorization", kBasic}},
               json{{"ResetType", "PowerCycle"}}.dump()};
  EXPECT_EQ(bmc.handle(r, t).status, 400);
  r.body = json{{"ResetType", "GracefulRestart"}}.dump();
  EXPECT_EQ(bmc.handle(r, t).status, 204);
  EXPECT_EQ(bmc.bmcResets(), 1);
  EXPECT_EQ(bmc.sessionsOpen(), 0u);
  EXPECT_EQ(bmc.handle(get("/redfish/v1"), t + std::chrono::milliseconds(500)).status, 503);
  EXPECT_EQ(bmc.handle(get("/redfish/v1/Managers/BMC_0"), t + std::chrono::seconds(2)).status, 200);
  EXPECT_TRUE(bmc.poweredOn(t + std::chrono::seconds(2)));
  EXPECT_TRUE(bmc.powerLog().empty()) << "a BMC reset does not reset the tray";
}

TEST(RedfishBmcTest, TheFirmwareInventoryListsEveryComponentWithItsVersion) {
  BmcConfig c = config();
  c.firmware = {{"BMC_Firmware", "25.06-2"}, {"NVOS", "25.02.2553"}};
  RedfishBmc bmc(c);
  const auto t = RedfishBmc::Clock::now();
  auto list = bmc.handle(get("/redfish/v1/UpdateService/FirmwareInventory"), t);
  ASSERT_EQ(list.status, 200);
  EXPECT_EQ(list.body["Members@odata.count"], 2);
  auto nvos = bmc.handle(get("/redfish/v1/UpdateService/FirmwareInventory/NVOS"), t);
  EXPECT_EQ(nvos.body["Version"], "25.02.2553");
  EXPECT_EQ(bmc.handle(get("/redfish/v1/UpdateService/FirmwareInventory/nope"), t).status, 404);
  EXPECT_EQ(bmc.handle(get("/redfish/v1/Managers/BMC_0"), t).body["FirmwareVersion"], "25.06-2");
  BmcRequest put{"PATCH", "/redfish/v1/Systems/System_0", {{"authorization", kBasic}}, "{}"};
  EXPECT_EQ(bmc.handle(put, t).status, 405);
  EXPECT_EQ(bmc.handle(get("/redfish/v1/Nope"), t).status, 404);
}

BmcRequest pushRequest(const std::string& target, const std::string& image) {
  const std::string b = "kilnBoundary7";
  std::string body =
      "--" + b +
      "\r\nContent-Disposition: form-data; name=\"UpdateParameters\"\r\nContent-Type: application/json\r\n\r\n" +
      json{{"Targets", {target}}}.dump() + "\r\n--" + b +
      "\r\nContent-Disposition: form-data; name=\"UpdateFile\"; filename=\"x.fwpkg\"\r\n\r\n" + image + "\r\n--" + b +
      "--\r\n";
  return {"POST",
          "/redfish/v1/UpdateService/update-multipart",
          {{"authorization", kBasic}, {"content-type", "multipart/form-data; boundary=" + b}},
          body};
}

// Issue 32: an update pushed as Redfish's multipart push runs as a Task and changes the
// component's version only once the Task completes; one update at a time.
TEST(RedfishBmcTest, AMultipartPushRunsAsATaskAndTheVersionChangesWhenItCompletes) {
  BmcConfig c = config();
  c.update_time = 1000ms;
  RedfishBmc bmc(c);
  const auto t = RedfishBmc::Clock::now();
  const std::string target = "/redfish/v1/UpdateService/FirmwareInventory/BMC_Firmware";
  auto pushed = bmc.handle(pushRequest(target, "KILN-HWSIM-FW BMC_Firmware 25.09-1\npayload"), t);
  ASSERT_EQ(pushed.status, 202) << pushed.body.dump();
  EXPECT_EQ(pushed.headers.at(0).second, "/redfish/v1/TaskService/Tasks/1");
  EXPECT_EQ(bmc.handle(pushRequest(target, "KILN-HWSIM-FW BMC_Firmware 25.09-2\n"), t + 100ms).status, 503);
  auto running = bmc.handle(get("/redfish/v1/TaskService/Tasks/1"), t + 500ms);
  EXPECT_EQ(running.body["TaskState"], "Running");
  EXPECT_EQ(running.body["PercentComplete"], 50);
  EXPECT_EQ(bmc.firmware().at("BMC_Firmware"), "25.06-2");
  auto done = bmc.handle(get("/redfish/v1/TaskService/Tasks/1"), t + 1500ms);
  EXPECT_EQ(done.body["TaskState"], "Completed");
  EXPECT_EQ(bmc.handle(get(target), t + 1600ms).body["Version"], "25.09-1");
  // The image must be for the component it is pushed to, and a package this BMC takes.
  EXPECT_EQ(bmc.handle(pushRequest(target, "KILN-HWSIM-FW HMC_Firmware 1\n"), t + 2s).status, 400);
  EXPECT_EQ(bmc.handle(pushRequest(target, "MZ\x90\x00 not a package"), t + 2s).status, 400);
  EXPECT_EQ(
      bmc.handle(pushRequest("/redfish/v1/UpdateService/FirmwareInventory/nope", "KILN-HWSIM-FW nope 1\n"), t + 2s)
          .status,
      400);
  BmcRequest broken = pushRequest(target, "x");
  broken.body = broken.body.substr(0, broken.body.size() / 2);
  EXPECT_EQ(bmc.handle(broken, t + 2s).status, 400);
}

TEST(RedfishBmcTest, SeededUpdateFaultsHangTheTaskOrLeaveTheVersionUnchanged) {
  BmcConfig c = config();
  c.update_time = 100ms;
  c.faults = {"task-hangs"};
  RedfishBmc hangs(c);
  const auto t = RedfishBmc::Clock::now();
  const std::string target = "/redfish/v1/UpdateService/FirmwareInventory/CPLD_0";
  ASSERT_EQ(hangs.handle(pushRequest(target, "KILN-HWSIM-FW CPLD_0 0.2.0\n"), t).status, 202);
  EXPECT_EQ(hangs.handle(get("/redfish/v1/TaskService/Tasks/1"), t + 1h).body["TaskState"], "Running");
  c.faults = {"version-unchanged"};
  RedfishBmc stale(c);
  ASSERT_EQ(stale.handle(pushRequest(target, "KILN-HWSIM-FW CPLD_0 0.2.0\n"), t).status, 202);
  EXPECT_EQ(stale.handle(get("/redfish/v1/TaskService/Tasks/1"), t + 1s).body["TaskState"], "Completed");
  EXPECT_EQ(stale.firmware().at("CPLD_0"), "0.1.0c");
  EXPECT_FALSE(multipartParts("multipart/form-data; boundary=x", "no delimiter here"));
  EXPECT_FALSE(multipartParts("application/json", "--x\r\n"));
}

}  // namespace
}  // namespace kiln::sim
