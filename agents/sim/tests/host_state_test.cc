#include "agents/sim/host_state.h"

#include <gtest/gtest.h>

namespace kiln::sim {
namespace {

// Test shorthand for a Fault with positional fields.
inline Fault mk(FaultKind kind, int gpu = -1, int link = -1, int remaining = -1,
                std::string tool = "", double factor = 1.0, int xid = 0) {
  Fault f;
  f.kind = kind;
  f.gpu = gpu;
  f.link = link;
  f.remaining = remaining;
  f.tool = std::move(tool);
  f.factor = factor;
  f.xid = xid;
  return f;
}

TEST(HostStateTest, DefaultStateIsDeterministicPerHostName) {
  HostState a = makeDefaultState("cat-r01-t03", Platform::kCatalina);
  HostState b = makeDefaultState("cat-r01-t03", Platform::kCatalina);
  EXPECT_EQ(toJson(a), toJson(b));
  ASSERT_EQ(a.gpus.size(), 4u);
  EXPECT_EQ(a.gpus[0].links.size(), 18u);
  EXPECT_EQ(a.gpus[0].serial.size(), 13u);
  EXPECT_EQ(a.gpus[0].uuid.rfind("GPU-", 0), 0u);
  EXPECT_EQ(a.gpus[0].uuid.size(), 40u);
}

TEST(HostStateTest, DifferentHostsGetDifferentIdentities) {
  HostState a = makeDefaultState("cat-r01-t03", Platform::kCatalina);
  HostState b = makeDefaultState("cat-r01-t04", Platform::kCatalina);
  EXPECT_NE(a.gpus[0].serial, b.gpus[0].serial);
  EXPECT_NE(a.gpus[0].uuid, b.gpus[0].uuid);
  EXPECT_NE(a.boot_id, b.boot_id);
  EXPECT_NE(a.gpus[0].uuid, a.gpus[1].uuid);
}

TEST(HostStateTest, PlatformsCarryTheirOwnDefaults) {
  HostState gb300 = makeDefaultState("cle-r01-t01", Platform::kClemente);
  EXPECT_EQ(std::string(platformName(gb300.platform)), "clemente");
  EXPECT_EQ(gb300.versions.at("nic").rfind("40.", 0), 0u);  // ConnectX-8 firmware line
  for (const char* c : kComponents) EXPECT_TRUE(gb300.versions.count(c)) << c;
}

TEST(HostStateTest, JsonRoundTripPreservesEverything) {
  HostState s = makeDefaultState("cat-r02-t11", Platform::kCatalina);
  s.pending["gpu_vbios"] = "97.00.9A.00.01";
  s.gpus[2].links[7] = {5, 1, 2, 1};
  s.gpus[1].remap_pending = true;
  s.gpus[1].recovery_action = "Reset";
  s.xids.push_back({1, 63, 4});
  s.faults.push_back(mk(FaultKind::kWeakLinkTransient, 2, 7, 3, "", 1.0, 0));
  s.faults.push_back(mk(FaultKind::kSlow, -1, -1, -1, "dcgmi", 2.5, 0));
  auto back = hostStateFromJson(toJson(s));
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(toJson(*back), toJson(s));
  EXPECT_EQ(back->faults[1].factor, 2.5);
}

TEST(HostStateTest, RejectsMalformedState) {
  EXPECT_FALSE(hostStateFromJson(nlohmann::json{{"host", "x"}}).ok());
  auto j = toJson(makeDefaultState("h", Platform::kCatalina));
  j["platform"] = "vax";
  EXPECT_FALSE(hostStateFromJson(j).ok());
}

}  // namespace
}  // namespace kiln::sim
