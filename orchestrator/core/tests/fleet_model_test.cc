#include "orchestrator/core/fleet_model.h"

#include <gtest/gtest.h>

#include <set>

namespace kiln::core {
namespace {

TEST(FleetModelTest, ClementePodIsOneRackOf18TraysWithTwoSpares) {
  PodLayout pod = expandPod("p1", Platform::kClemente);
  ASSERT_EQ(pod.racks.size(), 1u);
  ASSERT_EQ(pod.hosts.size(), 18u);
  EXPECT_EQ(pod.switch_trays.size(), 9u);
  EXPECT_EQ(pod.hosts[0].id, "p1-h01");
  int spares = 0;
  for (const auto& h : pod.hosts) spares += h.spare;
  EXPECT_EQ(spares, 2);
  EXPECT_TRUE(pod.hosts[16].spare);
  EXPECT_TRUE(pod.hosts[17].spare);
}

TEST(FleetModelTest, CatalinaPodSpansTwoRacksWithASparePerRack) {
  PodLayout pod = expandPod("p2", Platform::kCatalina);
  ASSERT_EQ(pod.racks.size(), 2u);
  std::set<std::string> spare_racks;
  int hosts_in_r2 = 0;
  for (const auto& h : pod.hosts) {
    if (h.spare) spare_racks.insert(h.rack_id);
    hosts_in_r2 += h.rack_id == "p2-r2";
  }
  EXPECT_EQ(spare_racks, (std::set<std::string>{"p2-r1", "p2-r2"}));
  EXPECT_EQ(hosts_in_r2, 9);
  const auto& g = geometry(Platform::kCatalina);
  EXPECT_EQ(g.compute_trays * g.gpus_per_tray, g.gpus_per_pod);
  EXPECT_EQ(g.active_gpus_per_pod(), 64);
}

TEST(FleetModelTest, IdsAreUniqueAndStable) {
  std::set<std::string> ids;
  for (const char* pod : {"a", "a-h01", "b"}) {
    for (const auto& h : expandPod(pod, Platform::kCatalina).hosts) {
      EXPECT_TRUE(ids.insert(h.id).second) << h.id;
      for (int g = 0; g < 4; ++g) EXPECT_TRUE(ids.insert(gpuId(h.id, g)).second);
    }
  }
  EXPECT_EQ(expandPod("x", Platform::kClemente).hosts[5].id, "x-h06");
}

}  // namespace
}  // namespace kiln::core

namespace kiln::core {
namespace {

TEST(PodStateTest, NamesParseBackAndTheInServiceSetIsWrittenForSql) {
  for (auto s : allPodStates()) EXPECT_EQ(parsePodState(podStateName(s)), s) << s;
  EXPECT_FALSE(parsePodState("sideways").has_value());
  EXPECT_EQ(podStateSqlList(inServicePodStates()), "('in_service', 'degraded')");
  EXPECT_FALSE(podInService(PodState::kMaintenance));
}

TEST(PodStateTest, SparesCoverUpToTwoFailedTrays) {
  const auto& g = geometry(Platform::kClemente);
  EXPECT_EQ(podState({{HostState::kAvailable, 18}}, g), PodState::kInService);
  EXPECT_EQ(podState({{HostState::kAvailable, 14}, {HostState::kAllocated, 2}, {HostState::kFailed, 2}}, g),
            PodState::kInService);
  EXPECT_EQ(podState({{HostState::kAvailable, 15}, {HostState::kFailed, 3}}, g), PodState::kDegraded);
  EXPECT_EQ(podState({{HostState::kAvailable, 17}, {HostState::kDraining, 1}}, g), PodState::kMaintenance);
  EXPECT_EQ(podState({{HostState::kIncoming, 18}}, g), PodState::kIncoming);
  EXPECT_EQ(podState({{HostState::kFailed, 18}}, g), PodState::kDown);
  EXPECT_EQ(podState({{HostState::kRetired, 18}}, g), PodState::kRetired);
}

}  // namespace
}  // namespace kiln::core
