#include "agents/sim/fleet/fleet_cli.h"

#include <gtest/gtest.h>

namespace kiln::vfleet {
namespace {

using nlohmann::json;

std::vector<std::string> base() {
  return {"--url", "http://127.0.0.1:8080", "--enroll-token-file", "/e", "--hosts", "pod:p1,p2",
          "--token-file", "/t"};
}

TEST(FleetCliTest, ParsesFlagsAndFaults) {
  auto args = base();
  for (const char* a : {"--time-scale", "0.01", "--connections=64", "--fault-kind",
                        "weak_link_persistent:gpu=1", "--fault", "h3:row_remap_pending",
                        "--fault-rate", "0.5", "--max-hosts", "10"}) {
    args.push_back(a);
  }
  auto o = parseCli(args);
  ASSERT_TRUE(o.ok()) << o.error().message;
  EXPECT_DOUBLE_EQ(o->time_scale, 0.01);
  EXPECT_EQ(o->connections, 64);
  ASSERT_EQ(o->fault_kinds.size(), 1u);
  EXPECT_EQ(o->fault_kinds[0].kind, sim::FaultKind::kWeakLinkPersistent);
  EXPECT_EQ(o->fault_kinds[0].gpu, 1);
  ASSERT_EQ(o->host_faults.size(), 1u);
  EXPECT_EQ(o->host_faults[0].first, "h3");
  EXPECT_EQ(o->max_hosts, 10u);
}

TEST(FleetCliTest, RejectsMissingAndBadFlags) {
  EXPECT_FALSE(parseCli({"--url", "http://x:1"}).ok());
  auto args = base();
  args.push_back("--poll-wait");
  args.push_back("61");
  EXPECT_FALSE(parseCli(args).ok());
  args = base();
  args.push_back("--fault-kind");
  args.push_back("meteor");
  EXPECT_FALSE(parseCli(args).ok());
  // Listing pods needs an API token.
  EXPECT_FALSE(parseCli({"--url", "http://x:1", "--enroll-token-file", "/e", "--hosts", "all"}).ok());
  EXPECT_TRUE(parseCli({"--url", "http://x:1", "--enroll-token-file", "/e", "--hosts", "hosts.txt"}).ok());
  EXPECT_EQ(parseCli({"--help"}).error().message, "help");
}

TEST(FleetCliTest, DurationSpreadIsASigmaFromZeroToTwo) {
  auto o = parseCli(base());
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->duration_spread, 0);  // fixed durations unless asked
  auto args = base();
  args.push_back("--duration-spread=0.25");
  o = parseCli(args);
  ASSERT_TRUE(o.ok()) << o.error().message;
  EXPECT_DOUBLE_EQ(o->duration_spread, 0.25);
  for (const char* bad : {"-0.1", "nan", "NaN", "inf", "2.5", "wide", "0.25x", ""}) {
    args = base();
    args.push_back("--duration-spread");
    args.push_back(bad);
    auto r = parseCli(args);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message.find("--duration-spread"), std::string::npos) << r.error().message;
  }
  EXPECT_NE(usage().find("--duration-spread"), std::string::npos);
}

TEST(FleetCliTest, FaultSpecOptions) {
  auto f = parseFaultSpec("hang:tool=dcgmi,count=2");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->tool, "dcgmi");
  EXPECT_EQ(f->remaining, 2);
  EXPECT_FALSE(parseFaultSpec("xid").ok());  // needs xid=N
  EXPECT_TRUE(parseFaultSpec("xid:xid=79,gpu=0").ok());
  EXPECT_FALSE(parseFaultSpec("slow:speed=2").ok());
}

TEST(FleetCliTest, HostFileTakesOptionalPlatforms) {
  auto hosts = parseHostFile("# demo\nh1\nh2 clemente  # spare\n\nh3 san_miguel\n");
  ASSERT_TRUE(hosts.ok());
  ASSERT_EQ(hosts->size(), 3u);
  EXPECT_EQ((*hosts)[1].platform, sim::Platform::kClemente);
  EXPECT_FALSE(parseHostFile("h1 vax\n").ok());
}

TEST(FleetCliTest, ListsHostsPageByPage) {
  std::vector<std::string> asked;
  FetchJson fetch = [&](const std::string& target) -> Result<json> {
    asked.push_back(target);
    if (target.find("cursor=c2") != std::string::npos)
      return json{{"items", {{{"id", "h3"}, {"pod", "p1"}, {"platform", "clemente"}}}}, {"next_cursor", nullptr}};
    return json{{"items", {{{"id", "h1"}, {"pod", "p1"}, {"platform", "catalina"}},
                           {{"id", "h2"}, {"pod", "p1"}, {"platform", "catalina"}}}},
                {"next_cursor", "c2"}};
  };
  auto all = listHosts(*parseHostSelection("all"), fetch, 0);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[2].platform, sim::Platform::kClemente);
  EXPECT_EQ(asked[0], "/api/v1/hosts?limit=500");
  EXPECT_EQ(asked[1], "/api/v1/hosts?limit=500&cursor=c2");
  asked.clear();
  auto limited = listHosts(*parseHostSelection("pod:p1"), fetch, 2);
  ASSERT_TRUE(limited.ok());
  EXPECT_EQ(limited->size(), 2u);
  EXPECT_EQ(asked[0], "/api/v1/hosts?limit=500&pod=p1");
}

TEST(FleetCliTest, PodVersionsTakeTheMostCommonVersion) {
  json pod = {{"component_versions",
               {{"driver", {{"570.1", 17}, {"560.9", 1}}}, {"gpu_vbios", {{"97.0", 72}}},
                {"unknown_thing", {{"1", 1}}}}}};
  auto v = podVersions(pod);
  EXPECT_EQ(v["driver"], "570.1");
  EXPECT_EQ(v["gpu_vbios"], "97.0");
  EXPECT_EQ(v.count("unknown_thing"), 0u);
}

TEST(FleetCliTest, StartFaultsAreSeededPerHostAndNotDoubled) {
  CliOptions o;
  o.fault_seed = 3;
  o.fault_rate = 0.5;
  o.fault_kinds.push_back(*parseFaultSpec("row_remap_pending"));
  o.host_faults.emplace_back("h-7", *parseFaultSpec("weak_link_transient:count=2"));
  int chosen = 0;
  for (int i = 0; i < 40; ++i) {
    auto s = sim::makeDefaultState("h-" + std::to_string(i), sim::Platform::kCatalina);
    auto again = s;
    auto added = applyStartFaults(s, o);
    EXPECT_EQ(added, applyStartFaults(again, o));  // deterministic
    EXPECT_TRUE(applyStartFaults(s, o).empty());   // already there
    chosen += std::count_if(added.begin(), added.end(),
                            [](const sim::Fault& f) { return f.kind == sim::FaultKind::kRowRemapPending; });
    const bool weak = std::any_of(added.begin(), added.end(), [](const sim::Fault& f) {
      return f.kind == sim::FaultKind::kWeakLinkTransient;
    });
    EXPECT_EQ(weak, i == 7);
  }
  EXPECT_GT(chosen, 8);
  EXPECT_LT(chosen, 32);
}

TEST(FleetCliTest, StatusLineShowsRatesAndLatencies) {
  StatusInputs in;
  in.now.hosts = 36;
  in.now.enrolled = 36;
  in.now.polls = 100;
  in.before.polls = 50;
  in.interval_s = 10;
  in.poll_p99 = 25.1;
  in.request_p50 = 0.002;
  in.now.sibling_wakeups = 17;
  const std::string line = statusLine(in);
  EXPECT_NE(line.find("woken 17"), std::string::npos) << line;
  EXPECT_NE(line.find("hosts 36 enrolled 36"), std::string::npos) << line;
  EXPECT_NE(line.find("polls/s 5.0"), std::string::npos) << line;
  EXPECT_NE(line.find("p99 25.100s"), std::string::npos) << line;
  EXPECT_NE(line.find("req p50 2.0ms"), std::string::npos) << line;
}

}  // namespace
}  // namespace kiln::vfleet
