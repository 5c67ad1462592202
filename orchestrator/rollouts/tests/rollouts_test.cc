#include <gtest/gtest.h>

#include "orchestrator/rollouts/bundle.h"
#include "orchestrator/rollouts/plan_document.h"
#include "orchestrator/rollouts/policy.h"

namespace kiln::rollouts {
namespace {

const std::string kSha(64, 'a');

// A bundle as the REST edge decodes one (api/tests/rollout_documents_test.cc's document).
Bundle bundle() {
  Bundle b;
  b.name = "gb200-fw";
  b.version = "1.4.0";
  b.platforms = {"catalina"};
  b.components = {{"driver", "580.65.06", "https://a/d.run", kSha}, {"nvswitch", "1.4.0", "https://a/s.bin", kSha}};
  b.prerequisites = {{"bmc", "25.04-1"}};
  return b;
}

TEST(BundleTest, ComparesVersionsNumerically) {
  EXPECT_LT(compareVersions("570.133.20", "580.65.06"), 0);
  EXPECT_LT(compareVersions("1.9", "1.10"), 0);
  EXPECT_EQ(compareVersions("1.04", "1.4"), 0);
  EXPECT_LT(compareVersions("25.04-1", "25.04-2"), 0);
  EXPECT_GT(compareVersions("25.10", "25.04-1"), 0);
}

TEST(BundleTest, PodComplianceCoversPlatformPrerequisitesAndSwitchTrays) {
  Bundle b = bundle();
  std::map<std::string, std::map<std::string, std::string>> hosts = {
      {"h1", {{"driver", "580.65.06"}, {"bmc", "25.04-1"}}}, {"h2", {{"driver", "570.1"}, {"bmc", "25.10"}}}};
  std::map<std::string, std::map<std::string, std::string>> switches = {{"s1", {{"nvswitch", "1.4.0"}}}};
  auto c = podCompliance(b, "p1", "catalina", hosts, switches);
  EXPECT_EQ(c.state, Compliance::kNeedsUpgrade);
  EXPECT_EQ(c.hosts_compliant, 1);
  EXPECT_EQ(c.hosts_needing_upgrade, 1);
  hosts["h2"]["driver"] = "580.65.06";
  EXPECT_EQ(podCompliance(b, "p1", "catalina", hosts, switches).state, Compliance::kCompliant);
  switches["s1"]["nvswitch"] = "1.3.0";
  EXPECT_EQ(podCompliance(b, "p1", "catalina", hosts, switches).state, Compliance::kNeedsUpgrade);
  hosts["h1"]["bmc"] = "24.12";
  auto old_bmc = podCompliance(b, "p1", "catalina", hosts, switches);
  EXPECT_EQ(old_bmc.state, Compliance::kIncompatible);
  EXPECT_NE(old_bmc.reasons[0].find("below the prerequisite"), std::string::npos);
  EXPECT_EQ(podCompliance(b, "p1", "clemente", hosts, switches).state, Compliance::kIncompatible);
}

TEST(BundleTest, AnOlderVersionIsADowngradeNeverAnUpgrade) {
  EXPECT_STREQ(bundleIs("580.65.06", "570.133.20"), "newer");
  EXPECT_STREQ(bundleIs("580.65.06", "580.65.06"), "same");
  EXPECT_STREQ(bundleIs("28.44.1036", "28.45.1200"), "older");
  Bundle b = bundle();
  std::map<std::string, std::map<std::string, std::string>> hosts = {
      {"h1", {{"driver", "590.10.01"}, {"bmc", "25.04-1"}}}, {"h2", {{"driver", "570.1"}, {"bmc", "25.10"}}}};
  std::map<std::string, std::map<std::string, std::string>> switches = {{"s1", {{"nvswitch", "1.4.0"}}}};
  // h1 runs a newer driver than the bundle: the pod would go back, whatever h2 needs.
  auto c = podCompliance(b, "p1", "catalina", hosts, switches);
  EXPECT_EQ(c.state, Compliance::kNeedsDowngrade);
  EXPECT_STREQ(complianceName(c.state), "needs_downgrade");
  EXPECT_EQ(c.hosts_needing_downgrade, 1);
  EXPECT_EQ(c.hosts_needing_upgrade, 1);
  ASSERT_EQ(c.downgrades.size(), 1u);
  EXPECT_EQ(c.downgrades[0], "h1: driver 590.10.01 -> 580.65.06 (older)");
  // A newer switch tray alone is a downgrade too; an incompatible pod stays incompatible.
  hosts["h1"]["driver"] = "580.65.06";
  hosts["h2"]["driver"] = "580.65.06";
  switches["s1"]["nvswitch"] = "1.5.0";
  EXPECT_EQ(podCompliance(b, "p1", "catalina", hosts, switches).state, Compliance::kNeedsDowngrade);
  EXPECT_EQ(podCompliance(b, "p1", "clemente", hosts, switches).state, Compliance::kIncompatible);
  // The target level: each component's direction, the downgrade named.
  auto t = targetCompliance(b, {{"driver", "600.1"}, {"bmc", "25.10"}}, false);
  EXPECT_EQ(t.state, Compliance::kNeedsDowngrade);
  EXPECT_EQ(t.downgrades, (std::vector<std::string>{"driver 600.1 -> 580.65.06 (older)"}));
}

std::vector<PodFacts> pods(int buildings, int per_building) {
  std::vector<PodFacts> out;
  for (int b = 1; b <= buildings; ++b)
    for (int p = 1; p <= per_building; ++p) {
      PodFacts f;
      f.id = "b" + std::to_string(b) + "-p" + std::to_string(p);
      f.building = "b" + std::to_string(b);
      f.site = "s";
      f.platform = "catalina";
      f.state = core::PodState::kInService;
      f.compliance.state = Compliance::kNeedsUpgrade;
      out.push_back(f);
    }
  return out;
}

TEST(PlannerTest, CanaryThenCumulativeWavesSpreadOverBuildings) {
  Policy pol;
  pol.canary_pods = 1;
  pol.waves = {{25, true}, {100, true}};
  auto plan = planRollout(pods(2, 10), pol);
  ASSERT_EQ(plan.waves.size(), 3u);
  EXPECT_EQ(plan.waves[0], (std::vector<std::string>{"b1-p1"}));
  EXPECT_EQ(plan.waves[1].size(), 4u);  // up to ceil(25% of 20) = 5 cumulative
  EXPECT_EQ(plan.waves[1][0], "b2-p1");  // spread: alternate buildings
  EXPECT_EQ(plan.waves[2].size(), 15u);
  EXPECT_EQ(plan.eligible, 20);
}

TEST(PlannerTest, PlansDowngradesButNamesEachOne) {
  auto ps = pods(1, 3);
  ps[1].compliance.state = Compliance::kNeedsDowngrade;
  ps[1].compliance.downgrades = {"nic 28.45.1200 -> 28.44.1036 (older)"};
  auto plan = planRollout(ps, Policy{});
  EXPECT_EQ(plan.eligible, 3);
  ASSERT_EQ(plan.downgrades.size(), 1u);
  EXPECT_EQ(plan.downgrades[0].pod, "b1-p2");
  EXPECT_EQ(plan.downgrades[0].reasons, (std::vector<std::string>{"nic 28.45.1200 -> 28.44.1036 (older)"}));
  EXPECT_EQ(planDocument(plan)["downgrades"][0]["pod"], "b1-p2");
  EXPECT_TRUE(planDocument(planRollout(pods(1, 3), Policy{}))["downgrades"].empty());
}

TEST(PlannerTest, ExcludesWithReasons) {
  auto ps = pods(1, 5);
  ps[0].compliance.state = Compliance::kCompliant;
  ps[1].compliance.state = Compliance::kIncompatible;
  ps[1].compliance.reasons = {"platform clemente is not one of the bundle's"};
  ps[2].other_rollout = "ro-3";
  ps[3].state = core::PodState::kMaintenance;
  ps[4].allocated = true;
  Policy pol;
  pol.skip_allocated = true;
  auto plan = planRollout(ps, pol);
  EXPECT_EQ(plan.eligible, 0);
  ASSERT_EQ(plan.excluded.size(), 5u);
  EXPECT_EQ(plan.excluded[0].reason, "compliant");
  EXPECT_NE(plan.excluded[1].reason.find("incompatible: platform"), std::string::npos);
  EXPECT_EQ(plan.excluded[2].reason, "in rollout ro-3");
  EXPECT_NE(plan.excluded[3].reason.find("not in service"), std::string::npos);
  EXPECT_NE(plan.excluded[4].reason.find("allocated"), std::string::npos);
}

AdmissionInput input(int n, int buildings = 1) {
  AdmissionInput in;
  in.policy.max_fraction_down_per_building.reset();
  in.policy.max_rebooting_pods_per_building = 100;
  for (int i = 0; i < n; ++i) {
    const std::string b = "b" + std::to_string(i % buildings);
    in.pods.push_back({"p" + std::to_string(i), b, 0, PodPhase::kPending, false});
    in.buildings[b].pods++;
  }
  return in;
}

TEST(AdmissionTest, NeverExceedsMaxConcurrentPods) {
  auto in = input(10);
  in.policy.max_concurrent_pods = 3;
  in.pods[0].phase = PodPhase::kUpgrading;
  auto r = admit(in);
  EXPECT_EQ(r.admit.size(), 2u);
  EXPECT_NE(r.waiting.at("p5").find("concurrency"), std::string::npos);
}

TEST(AdmissionTest, CapacityFloorCountsPodsDownForOtherReasons) {
  auto in = input(8);
  in.policy.max_concurrent_pods = 8;
  in.policy.max_pods_down_per_building = 3;
  in.buildings["b0"].down = 2;  // e.g. a pod in repair and another rollout's pod
  auto r = admit(in);
  ASSERT_EQ(r.admit.size(), 1u);
  EXPECT_NE(r.waiting.at("p1").find("capacity"), std::string::npos);
  in.policy.max_pods_down_per_building.reset();
  in.policy.max_fraction_down_per_building = 0.25;  // 25% of 8 = 2, 2 already down
  EXPECT_TRUE(admit(in).admit.empty());
}

TEST(AdmissionTest, PowerLimitPerBuilding) {
  auto in = input(6, 2);
  in.policy.max_concurrent_pods = 6;
  in.policy.max_rebooting_pods_per_building = 1;
  in.buildings["b0"].upgrading = 1;
  auto r = admit(in);
  ASSERT_EQ(r.admit.size(), 1u);
  EXPECT_EQ(r.admit[0], "p1");  // building b1
  EXPECT_NE(r.waiting.at("p0").find("power"), std::string::npos);
}

TEST(AdmissionTest, HaltsWhenFailureBudgetExceededAndStartsNothing) {
  auto in = input(6);
  in.policy.failure_budget_pods = 1;
  in.pods[0].phase = PodPhase::kFailed;
  EXPECT_FALSE(admit(in).halt);
  in.pods[1].phase = PodPhase::kFailed;
  auto r = admit(in);
  EXPECT_TRUE(r.halt);
  EXPECT_TRUE(r.admit.empty());
  EXPECT_NE(r.waiting.at("p2").find("budget"), std::string::npos);
  EXPECT_EQ(r.halt_reason, "2 pods failed; the failure budget allows 1");
  // No failure allowed: the first one halts, and says so in the singular.
  in.policy.failure_budget_pods = 0;
  in.pods[1].phase = PodPhase::kPending;
  EXPECT_EQ(admit(in).halt_reason, "1 pod failed; the failure budget allows 0");
}

TEST(AdmissionTest, PausedStartsNothingAndWavesWaitForSoak) {
  auto in = input(4);
  in.pods[0].wave = 0;
  for (int i = 1; i < 4; ++i) in.pods[i].wave = 1;
  in.policy.max_concurrent_pods = 4;
  in.paused = true;
  EXPECT_TRUE(admit(in).admit.empty());
  in.paused = false;
  auto first = admit(in);
  EXPECT_EQ(first.admit, (std::vector<std::string>{"p0"}));  // wave 1 waits for the canary
  in.pods[0].phase = PodPhase::kSucceeded;
  in.now = core::TimePoint{} + std::chrono::hours(10);
  in.previous_wave_finished = in.now - std::chrono::seconds(60);
  in.policy.soak = std::chrono::seconds(600);
  auto soak = admit(in);
  EXPECT_TRUE(soak.admit.empty());
  EXPECT_NE(soak.waiting.at("p1").find("soak"), std::string::npos);
  in.now += std::chrono::seconds(600);
  EXPECT_EQ(admit(in).admit.size(), 3u);
}

TEST(AdmissionTest, AllocatedPodsWaitAndTheSchedulerIsAskedOnlyForPodsTheLimitsAdmit) {
  auto in = input(4);
  in.policy.max_concurrent_pods = 2;
  in.pods[0].allocated = true;
  in.pods[2].allocated = true;
  auto r = admit(in);
  // p0 holds one of the two slots while the scheduler releases it; p1 takes the other.
  EXPECT_EQ(r.admit, (std::vector<std::string>{"p1"}));
  EXPECT_EQ(r.release, (std::vector<std::string>{"p0"}));
  EXPECT_NE(r.waiting.at("p0").find("allocated"), std::string::npos);
  // p2 is allocated too, but no slot is free: the scheduler is not asked to empty it yet.
  EXPECT_NE(r.waiting.at("p2").find("concurrency"), std::string::npos) << r.waiting.at("p2");
  EXPECT_NE(r.waiting.at("p3").find("concurrency"), std::string::npos);
  // Paused: nobody is asked.
  in.paused = true;
  EXPECT_TRUE(admit(in).release.empty());
}

TEST(AdmissionTest, APodWithTooFewServiceableHostsWaitsWithoutTakingASlot) {
  auto in = input(3);
  in.policy.max_concurrent_pods = 1;
  // p0: 3 hosts in repair and 1 failed of 18; 16 must serve for a 64-GPU slice.
  in.pods[0].hosts = {18, 16, 64, {{core::HostState::kRepair, 3}, {core::HostState::kFailed, 1}}};
  // p1: 2 in repair, the spares cover them.
  in.pods[1].hosts = {18, 16, 64, {{core::HostState::kRepair, 2}}};
  auto r = admit(in);
  EXPECT_EQ(r.waiting.at("p0"), "repair: 3 hosts in repair, 1 failed; the pod needs 16 of 18 to serve 64 GPUs");
  EXPECT_EQ(r.admit, (std::vector<std::string>{"p1"}));  // p0 held no slot
  EXPECT_FALSE(r.halt);
  EXPECT_FALSE(r.complete);  // the waiting pod keeps its wave open (skip it to go on)
  in.pods[0].hosts.out = {{core::HostState::kQuarantine, 1}, {core::HostState::kFailed, 2}};
  EXPECT_EQ(admit(in).waiting.at("p0"), "repair: 2 hosts failed, 1 in quarantine; the pod needs 16 of 18 to serve 64 GPUs");
  // The states other than repair are named in the order of their names, not of the lifecycle.
  in.pods[0].hosts.out = {{core::HostState::kIncoming, 1}, {core::HostState::kBurnIn, 1}, {core::HostState::kRetired, 1}};
  EXPECT_EQ(admit(in).waiting.at("p0"),
            "repair: 1 host in burn-in, 1 incoming, 1 retired; the pod needs 16 of 18 to serve 64 GPUs");
  in.pods[0].hosts.out = {{core::HostState::kRepair, 2}};
  EXPECT_EQ(admit(in).admit, (std::vector<std::string>{"p0"}));
}

// UTC wall-clock time in the week of Monday 2026-11-30 (day 0; 1795996800 s after the epoch).
core::TimePoint at(int day, int hour, int minute = 0) {
  return core::TimePoint{} + std::chrono::seconds(1795996800) + std::chrono::hours(24 * day + hour) +
         std::chrono::minutes(minute);
}

TEST(MaintenanceWindowTest, ParsesDaysListsRangesAndTimes) {
  auto w = parseWindow("mon-fri 22:00-06:00");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->days, 0x1fu);
  EXPECT_EQ(w->start_min, 22 * 60);
  EXPECT_EQ(w->end_min, 6 * 60);
  EXPECT_EQ(parseWindow("Sat,SUN 00:00-24:00")->days, 0x60u);
  EXPECT_EQ(parseWindow("fri-mon 01:00-02:30")->days, 0x71u);  // wraps over the weekend
  EXPECT_EQ(parseWindow("02:00-05:00")->days, 0x7fu);          // every day
  EXPECT_EQ(parseWindow("tue,thu-fri 10:00-11:00")->days, 0x1au);
  for (const char* bad : {"", "22:00", "mon-fri", "mon-fry 01:00-02:00", "monday 01:00-02:00", "25:00-02:00",
                          "01:60-02:00", "24:00-02:00", "1:00-2:00", "01:00-24:30", "03:00-03:00", "mon, tue 01:00-02:00"}) {
    std::string why;
    EXPECT_FALSE(parseWindow(bad, &why)) << bad;
    EXPECT_NE(why.find("expected"), std::string::npos) << bad << ": " << why;
  }
}

TEST(MaintenanceWindowTest, OpenOnItsDaysAndPastMidnightIntoTheNextDay) {
  const std::vector<MaintenanceWindow> nights = {*parseWindow("mon-fri 22:00-06:00")};
  EXPECT_FALSE(windowOpen(nights, at(0, 21, 59)));  // Monday evening, before it opens
  EXPECT_TRUE(windowOpen(nights, at(0, 22)));
  EXPECT_TRUE(windowOpen(nights, at(1, 5, 59)));   // Tuesday early: Monday's window
  EXPECT_FALSE(windowOpen(nights, at(1, 6)));      // closed at 06:00
  EXPECT_TRUE(windowOpen(nights, at(5, 3)));       // Saturday 03:00: Friday's window
  EXPECT_FALSE(windowOpen(nights, at(5, 22)));     // Saturday night: none opens
  EXPECT_FALSE(windowOpen(nights, at(0, 3)));      // Monday 03:00: Sunday opened none
  EXPECT_TRUE(windowOpen({}, at(5, 22)));          // no windows: any time
  const std::vector<MaintenanceWindow> weekend = {*parseWindow("sat,sun 00:00-24:00")};
  EXPECT_TRUE(windowOpen(weekend, at(6, 23, 59)));
  EXPECT_FALSE(windowOpen(weekend, at(7, 0)));     // the next Monday
}

TEST(MaintenanceWindowTest, NextOpeningIsTheEarliestOfAnyWindowWithinAWeek) {
  const std::vector<MaintenanceWindow> ws = {*parseWindow("mon-fri 22:00-06:00"), *parseWindow("sun 10:00-12:00")};
  EXPECT_EQ(nextWindowOpen(ws, at(0, 12)), at(0, 22));
  EXPECT_EQ(nextWindowOpen(ws, at(0, 23)), at(0, 23));  // open: now
  EXPECT_EQ(nextWindowOpen(ws, at(5, 7)), at(6, 10));   // Saturday morning -> Sunday 10:00
  EXPECT_EQ(nextWindowOpen(ws, at(6, 12)), at(7, 22));  // Sunday noon -> Monday 22:00
}

TEST(AdmissionTest, OutsideTheMaintenanceWindowsNoPodStartsAndEachSaysWhenTheNextOpens) {
  auto in = input(3);
  in.policy.max_concurrent_pods = 3;
  in.policy.windows = {*parseWindow("mon-fri 22:00-06:00")};
  in.pods[2].allocated = true;
  in.pods[0].phase = PodPhase::kUpgrading;  // in flight: not stopped by the window
  in.now = at(4, 6, 30);                    // Friday 06:30: closed until 22:00
  auto closed = admit(in);
  EXPECT_TRUE(closed.admit.empty());
  EXPECT_TRUE(closed.release.empty()) << "the job scheduler was asked to release a pod outside the window";
  EXPECT_EQ(closed.waiting.at("p1"),
            "window: outside the maintenance windows (mon-fri 22:00-06:00); the next opens Fri 2026-12-04 22:00 UTC");
  EXPECT_FALSE(closed.waiting.count("p0"));
  in.now = at(4, 22, 1);
  auto open = admit(in);
  EXPECT_EQ(open.admit, (std::vector<std::string>{"p1"}));
  EXPECT_EQ(open.release, (std::vector<std::string>{"p2"}));
  // Paused says paused, not window: the operator's own reason comes first.
  in.now = at(5, 12);
  in.paused = true;
  EXPECT_EQ(admit(in).waiting.at("p1"), "paused");
}

TEST(MaintenanceWindowTest, ClosesAtTheEndOfTheOpenStretchJoiningAdjacentWindows) {
  const std::vector<MaintenanceWindow> nights = {*parseWindow("mon-fri 22:00-06:00")};
  EXPECT_EQ(windowCloses(nights, at(0, 23)), at(1, 6));
  EXPECT_EQ(windowCloses(nights, at(1, 5, 59)), at(1, 6));  // Monday's window, past midnight
  EXPECT_EQ(windowCloses(nights, at(0, 12)), std::nullopt);  // not open
  // Saturday and Sunday around the clock are one stretch, closing Monday 00:00; a Friday night
  // window running into it joins it too.
  const std::vector<MaintenanceWindow> weekend = {*parseWindow("sat,sun 00:00-24:00"), *parseWindow("fri 22:00-02:00")};
  EXPECT_EQ(windowCloses(weekend, at(5, 1)), at(7, 0));
  EXPECT_EQ(windowCloses(weekend, at(4, 23)), at(7, 0));
  EXPECT_EQ(windowCloses({*parseWindow("00:00-24:00")}, at(3, 3)), std::nullopt);  // never closes
  EXPECT_EQ(windowCloses({}, at(3, 3)), std::nullopt);
  // The first stretch long enough: Saturday 01:00 needs 2 h: fine at once; 3 days: none.
  EXPECT_EQ(nextWindowFitting(weekend, at(5, 1), std::chrono::hours(2)), at(5, 1));
  EXPECT_EQ(nextWindowFitting(weekend, at(5, 1), std::chrono::hours(72)), std::nullopt);
  // Tuesday 05:00 with 2 h needed: Monday's night closes at 06:00; Tuesday's opens 22:00.
  EXPECT_EQ(nextWindowFitting(nights, at(1, 5), std::chrono::hours(2)), at(1, 22));
  EXPECT_EQ(nextWindowFitting({}, at(1, 5), std::chrono::hours(2)), at(1, 5));
}

TEST(AdmissionTest, APodDoesNotStartInAWindowClosingSoonerThanTheRolloutsP90PodTime) {
  auto in = input(2);
  in.policy.max_concurrent_pods = 2;
  in.policy.windows = {*parseWindow("mon-fri 22:00-06:00")};
  in.pod_time_p90 = std::chrono::minutes(110);
  in.now = at(1, 4, 30);  // Tuesday 04:30: 90 min left of Monday's window
  auto late = admit(in);
  EXPECT_TRUE(late.admit.empty());
  EXPECT_EQ(late.waiting.at("p0"),
            "window: the maintenance window closes Tue 2026-12-01 06:00 UTC, sooner than this rollout's P90 pod time "
            "(110 min); the next long enough opens Tue 2026-12-01 22:00 UTC");
  // A pod time longer than any window: said, not left to wait without a word.
  in.pod_time_p90 = std::chrono::hours(9);
  EXPECT_NE(admit(in).waiting.at("p0").find("no maintenance window within a week is that long"), std::string::npos);
  in.pod_time_p90 = std::chrono::minutes(110);
  in.now = at(1, 4, 9);  // 111 min left: it fits
  EXPECT_EQ(admit(in).admit, (std::vector<std::string>{"p0", "p1"}));
  // Before any pod finished there is no pod time to go by: the window alone decides.
  in.now = at(1, 4, 30);
  in.pod_time_p90.reset();
  EXPECT_EQ(admit(in).admit, (std::vector<std::string>{"p0", "p1"}));
  // Without windows the pod time changes nothing.
  in.pod_time_p90 = std::chrono::hours(30);
  in.policy.windows.clear();
  EXPECT_EQ(admit(in).admit, (std::vector<std::string>{"p0", "p1"}));
}

TEST(PolicyTest, PercentilesAreNearestRank) {
  EXPECT_EQ(percentile({10, 20, 30, 40, 50, 60, 70, 80, 90, 100}, 90), 90);
  EXPECT_EQ(percentile({7}, 50), 7);
}

}  // namespace
}  // namespace kiln::rollouts
