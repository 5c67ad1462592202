// rollout plan | create | verbs | list | show against a fake transport: the requests built from
// flags (selector and policy JSON), usage errors, rendering.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/tests/rollout_fixtures.h"
#include "cli/tests/test_support.h"

namespace kiln::cli {
namespace {

using nlohmann::json;
using testing::CliHarness;
using testing::rolloutDoc;
using Query = std::vector<std::pair<std::string, std::string>>;

json planDoc() {
  return json::parse(R"({
    "bundle": {"id": "b-3", "name": "gb200-fw", "version": "2026.03"},
    "selector": {"sites": ["prn"], "buildings": [], "platforms": [], "pods": [], "labels": {"rack": "a"}},
    "policy": {"canary_pods": 1, "waves": ["50%", "100%"], "soak": "10m", "max_concurrent_pods": 2,
               "capacity_floor": {"max_percent_down": 25.0}, "allocated": "wait", "failure_budget": {"pods": 1},
               "max_rebooting_pods_per_building": 2, "order": "spread", "windows": ["mon-fri 22:00-06:00", "sun 02:00-04:00"]},
    "plan": {"waves": [{"index": 0, "name": "canary", "pods": ["prn-b01-p0001"]},
                       {"index": 1, "name": "wave 1", "pods": ["prn-b02-p0001", "prn-b01-p0002"]},
                       {"index": 2, "name": "wave 2", "pods": ["p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9", "p10"]}],
             "excluded": [{"pod": "prn-b01-p0003", "reason": "compliant"},
                          {"pod": "prn-b03-p0001", "reason": "in rollout ro-2"}],
             "eligible": 13},
    "dry_run": true})");
}

TEST(RolloutPlanTest, BuildsSelectorAndPolicyFromFlags) {
  CliHarness h;
  h.transport.reply(200, planDoc().dump());
  auto r = h.run({"rollout",
                  "plan",
                  "--bundle",
                  "gb200-fw@2026.03",
                  "--site",
                  "prn",
                  "--building",
                  "b01,b02",
                  "--building",
                  "b03,b01",
                  "--platform",
                  "clemente",
                  "--pod",
                  "p1",
                  "--label",
                  "rack=a",
                  "--label",
                  "row=3",
                  "--canary",
                  "2",
                  "--waves",
                  "5,20%,100%",
                  "--soak",
                  "30m",
                  "--max-concurrent",
                  "4",
                  "--max-percent-down",
                  "12.5",
                  "--allocated",
                  "skip",
                  "--failure-budget-percent",
                  "5",
                  "--max-rebooting",
                  "3",
                  "--order",
                  "name",
                  "--window",
                  "mon-fri 22:00-06:00",
                  "--window",
                  "sat,sun 00:00-24:00",
                  "--validation-workflow",
                  "nvlink-domain-validation"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  ASSERT_EQ(h.transport.requests.size(), 1u);
  const ApiRequest& req = h.transport.requests[0];
  EXPECT_EQ(req.method, "POST");
  EXPECT_EQ(req.path, "/api/v1/rollouts");
  EXPECT_EQ(json::parse(req.body), json::parse(R"({
    "bundle": "gb200-fw@2026.03", "dry_run": true,
    "selector": {"sites": ["prn"], "buildings": ["b01", "b02", "b03"], "platforms": ["clemente"], "pods": ["p1"],
                 "labels": {"rack": "a", "row": "3"}},
    "policy": {"canary_pods": 2, "waves": [5, "20%", "100%"], "soak": "30m", "max_concurrent_pods": 4,
               "capacity_floor": {"max_percent_down": 12.5}, "allocated": "skip", "failure_budget": {"percent": 5.0},
               "max_rebooting_pods_per_building": 3, "order": "name",
               "windows": ["mon-fri 22:00-06:00", "sat,sun 00:00-24:00"],
               "validation_workflow": "nvlink-domain-validation"}})"));
}

TEST(RolloutPlanTest, SendsOnlyTheGivenFieldsSoTheServerDefaultsTheRest) {
  CliHarness h;
  h.transport.reply(200, planDoc().dump());
  auto r = h.run({"rollout", "plan", "--bundle", "b-3", "--max-down", "3", "--failure-budget", "0", "--soak", "0s"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(json::parse(h.transport.requests[0].body), json::parse(R"({
    "bundle": "b-3", "dry_run": true, "selector": {},
    "policy": {"capacity_floor": {"max_pods_down": 3}, "failure_budget": {"pods": 0}, "soak": "0s"}})"));
}

TEST(RolloutPlanTest, PolicyFileIsTheBaseAndFlagsOverrideItsFields) {
  CliHarness h;
  h.fs.files["policy.yaml"] =
      "canary_pods: 3\nwaves: [\"25%\", \"100%\"]\ncapacity_floor:\n  max_pods_down: 2\norder: name\n";
  h.transport.reply(200, planDoc().dump());
  auto r = h.run({"rollout", "plan", "--bundle", "b-3", "--policy-file", "policy.yaml", "--canary", "1",
                  "--max-percent-down", "10"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(json::parse(h.transport.requests[0].body)["policy"], json::parse(R"({
    "canary_pods": 1, "waves": ["25%", "100%"], "capacity_floor": {"max_percent_down": 10.0}, "order": "name"})"));

  CliHarness j;
  j.fs.files["rollout.json"] = R"({"policy": {"max_concurrent_pods": 8}})";
  j.transport.reply(200, planDoc().dump());
  ASSERT_EQ(j.run({"rollout", "plan", "--bundle", "b-3", "--policy-file", "rollout.json"}).code, kExitOk);
  EXPECT_EQ(json::parse(j.transport.requests[0].body)["policy"], json::parse(R"({"max_concurrent_pods": 8})"));
}

TEST(RolloutPlanTest, RendersWavesAndEveryExcludedPodWithItsReason) {
  CliHarness h;
  h.transport.reply(200, planDoc().dump());
  auto r = h.run({"rollout", "plan", "--bundle", "b-3"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out,
            "Dry run (nothing was written): bundle gb200-fw@2026.03 (b-3), 13 pods eligible in 3 waves, 2 excluded\n"
            "selector:  sites prn; labels rack=a\n"
            "policy:    canary 1, waves 50%,100%, soak 10m, 2 pods at once, at most 25% of a building down, allocated pods: "
            "wait, halt when more than 1 pod fails, 2 rebooting per building, order spread, new pods only in mon-fri "
            "22:00-06:00; sun 02:00-04:00 (UTC)\n"
            "\n"
            "Waves:\n"
            "WAVE    PODS  POD LIST\n"
            "canary  1     prn-b01-p0001\n"
            "wave 1  2     prn-b02-p0001 prn-b01-p0002\n"
            "wave 2  10    p1 p2 p3 p4 p5 p6 p7 p8 ... (+2 more)\n"
            "\n"
            "Excluded (2):\n"
            "POD            REASON\n"
            "prn-b01-p0003  compliant\n"
            "prn-b03-p0001  in rollout ro-2\n");
}

TEST(RolloutPlanTest, BadFlagsAreUsageErrorsAndSendNothing) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"rollout", "plan"}, "kilnctl: missing --bundle\n"},
      {{"rollout", "plan", "--bundle", "b-3", "--max-down", "2", "--max-percent-down", "5"},
       "kilnctl: give --max-down or --max-percent-down, not both\n"},
      {{"rollout", "plan", "--bundle", "b-3", "--failure-budget", "2", "--failure-budget-percent", "5"},
       "kilnctl: give --failure-budget or --failure-budget-percent, not both\n"},
      {{"rollout", "plan", "--bundle", "b-3", "--waves", "10%,half"},
       "kilnctl: --waves needs cumulative percentages or pod counts like 10%,50%,100% or 5,20,100; 'half' is neither\n"},
      {{"rollout", "plan", "--bundle", "b-3", "--waves", "150%"},
       "kilnctl: --waves needs cumulative percentages or pod counts like 10%,50%,100% or 5,20,100; '150%' is neither\n"},
      {{"rollout", "plan", "--bundle", "b-3", "--soak", "10 minutes"}, ""},
      {{"rollout", "plan", "--bundle", "b-3", "--site", "prn,,ash"},
       "kilnctl: --site needs a name or a comma-separated list, not 'prn,,ash'\n"},
      {{"rollout", "plan", "--bundle", "b-3", "--label", "rack=a", "--label", "rack=b"},
       "kilnctl: --label rack given twice with different values\n"},
      {{"rollout", "plan", "--bundle", "b-3", "--allocated", "later"}, "kilnctl: --allocated must be wait or skip, not 'later'\n"},
      {{"rollout", "plan", "--bundle", "b-3", "--order", "random"}, "kilnctl: --order must be spread or name, not 'random'\n"},
      {{"rollout", "plan", "--bundle", "b-3", "--canary", "-1"}, "kilnctl: --canary must be from 0 to 1000, not -1\n"},
      {{"rollout", "plan", "--bundle", "b-3", "--policy-file", "missing.yaml"},
       "kilnctl: cannot read missing.yaml: No such file or directory\n"},
      {{"rollout", "create", "--bundle", "b-3", "--label", "rack"}, "kilnctl: --label needs KEY=VALUE, not 'rack'\n"},
      {{"rollout", "create", "--bundle", "b-3", "--allow-downgrade"},
       "kilnctl: --allow-downgrade needs --reason TEXT: why these pods go back to older versions (audited)\n"},
      {{"rollout", "plan", "--bundle", "b-3", "--window", "mon-fri 22:00-06:00", "--window", "weekdays 22:00-06:00"},
       "kilnctl: --window 'weekdays 22:00-06:00': unknown day 'weekdays': expected \"[DAYS ]HH:MM-HH:MM\" in UTC, e.g. "
       "\"mon-fri 22:00-06:00\" (days mon..sun)\n"},
  };
  for (const auto& [args, first_line] : cases) {
    CliHarness h;
    h.fs.files["list.yaml"] = "- 1\n";
    auto r = h.run(args);
    EXPECT_EQ(r.code, kExitUsage) << args.back();
    EXPECT_TRUE(h.transport.requests.empty()) << args.back();
    if (!first_line.empty()) {
      EXPECT_EQ(r.err.substr(0, r.err.find('\n') + 1), first_line) << args.back();
    }
    EXPECT_NE(r.err.find("Run 'kilnctl rollout "), std::string::npos) << r.err;
  }
  CliHarness h;
  h.fs.files["list.yaml"] = "- 1\n";
  auto r = h.run({"rollout", "plan", "--bundle", "b-3", "--policy-file", "list.yaml"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("must hold a policy object"), std::string::npos) << r.err;
}

TEST(RolloutCreateTest, PrintsTheIdAloneOnStdoutForScripts) {
  CliHarness h;
  h.transport.reply(201, rolloutDoc("created", {{"pending", 4}}, {{1, 0}, {3, 0}}).dump());
  auto r = h.run({"rollout", "create", "--bundle", "b-3", "--pod", "p1,p2,p3,p4"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  json body = json::parse(h.transport.requests[0].body);
  EXPECT_FALSE(body.contains("dry_run"));
  EXPECT_FALSE(body.contains("start"));
  EXPECT_EQ(body["selector"], json::parse(R"({"pods": ["p1", "p2", "p3", "p4"]})"));
  EXPECT_EQ(r.out, "ro-5\n");
  EXPECT_EQ(r.err, "created rollout ro-5 (created): 4 pods in 2 waves\nStart it: kilnctl rollout start ro-5\n");
}

TEST(RolloutCreateTest, AnAllowedDowngradeSendsItsReason) {
  CliHarness h;
  h.transport.reply(201, rolloutDoc("created", {{"pending", 4}}, {{1, 0}, {3, 0}}).dump());
  auto r = h.run({"rollout", "create", "--bundle", "b-3", "--allow-downgrade", "--reason", "580 hangs NCCL"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  json body = json::parse(h.transport.requests[0].body);
  EXPECT_EQ(body["allow_downgrade"], true);
  EXPECT_EQ(body["reason"], "580 hangs NCCL");
}

TEST(RolloutPlanTest, ADowngradeIsShownAsOne) {
  CliHarness h;
  h.transport.reply(200, R"json({"bundle": {"id": "b-1", "name": "fw", "version": "1"}, "selector": {}, "policy": {},
    "plan": {"waves": [{"index": 0, "name": "canary", "pods": ["p1"]}], "excluded": [], "eligible": 1,
             "downgrades": [{"pod": "p1", "reasons": ["nic 28.45.1200 -> 28.44.1036 (older)"]}]},
    "dry_run": true, "warnings": ["1 pod would move to older versions (p1: nic 28.45.1200 -> 28.44.1036 (older))"]})json");
  auto r = h.run({"rollout", "plan", "--bundle", "b-1"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.out.find("WARNING: 1 pod would move to older versions"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Downgrades (1; create refuses them without --allow-downgrade --reason TEXT)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nic 28.45.1200 -> 28.44.1036 (older)"), std::string::npos) << r.out;
}

TEST(RolloutCreateTest, StartAsksTheServerToStartAtOnce) {
  CliHarness h;
  h.transport.reply(201, rolloutDoc("running", {{"pending", 4}}, {{1, 0}, {3, 0}}).dump());
  auto r = h.run({"rollout", "create", "--bundle", "b-3", "--start"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(json::parse(h.transport.requests[0].body)["start"], true);
  EXPECT_NE(r.err.find("Follow it: kilnctl rollout watch ro-5"), std::string::npos);
}

TEST(RolloutCreateTest, AConflictIsAFailedCallWithTheServersReason) {
  CliHarness h;
  h.transport.reply(409, R"({"error": {"code": "conflict", "message": "nothing to roll out: no selected pod needs this bundle",
    "details": {"excluded": "12"}}})");
  auto r = h.run({"rollout", "create", "--bundle", "b-3"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "kilnctl: nothing to roll out: no selected pod needs this bundle (HTTP 409 conflict)\n  excluded: 12\n");
}

TEST(RolloutVerbTest, EachVerbPostsToItsPath) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"rollout", "start", "ro-5"}, "/api/v1/rollouts/ro-5/start"},
      {{"rollout", "pause", "ro-5"}, "/api/v1/rollouts/ro-5/pause"},
      {{"rollout", "resume", "ro-5"}, "/api/v1/rollouts/ro-5/resume"},
      {{"rollout", "abort", "ro-5"}, "/api/v1/rollouts/ro-5/abort"},
      {{"rollout", "retry", "ro-5", "prn-b01-p0002"}, "/api/v1/rollouts/ro-5/pods/prn-b01-p0002/retry"},
      {{"rollout", "skip", "ro-5", "pod a"}, "/api/v1/rollouts/ro-5/pods/pod%20a/skip"},
  };
  for (const auto& [args, path] : cases) {
    CliHarness h;
    h.transport.reply(200, rolloutDoc("paused", {{"succeeded", 1}, {"pending", 3}}, {{1, 1}, {3, 0}}).dump());
    auto r = h.run(args);
    ASSERT_EQ(r.code, kExitOk) << r.err;
    ASSERT_EQ(h.transport.requests.size(), 1u);
    EXPECT_EQ(h.transport.requests[0].method, "POST");
    EXPECT_EQ(h.transport.requests[0].path, path);
    EXPECT_EQ(h.transport.requests[0].body, "") << "no --reason: no body";
    EXPECT_EQ(r.out, "ro-5 paused: wave 1 0/3, 1/4 done (1 succeeded), 3 pending; P50 1h42m, P90 2h05m; ETA 3h10m\n");
    // --reason goes into the body, for the rollout's events and the audit log.
    CliHarness with_reason;
    with_reason.transport.reply(200, rolloutDoc("paused", {{"succeeded", 1}, {"pending", 3}}, {{1, 1}, {3, 0}}).dump());
    auto argv = args;
    argv.insert(argv.end(), {"--reason", "CX7 \"28.43\" drops links"});
    ASSERT_EQ(with_reason.run(argv).code, kExitOk);
    EXPECT_EQ(json::parse(with_reason.transport.requests.at(0).body), (json{{"reason", "CX7 \"28.43\" drops links"}}));
  }
  CliHarness h;
  auto missing = h.run({"rollout", "retry", "ro-5"});
  EXPECT_EQ(missing.code, kExitUsage);
  EXPECT_EQ(missing.err, "kilnctl: missing argument POD\nRun 'kilnctl rollout retry --help' for usage.\n");
}

TEST(RolloutVerbTest, AWrongStateIsAFailedCall) {
  CliHarness h;
  h.transport.reply(409, R"({"error": {"code": "conflict", "message": "rollout ro-5 is completed, not running",
    "details": {"state": "completed"}}})");
  auto r = h.run({"rollout", "pause", "ro-5"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_EQ(r.err, "kilnctl: rollout ro-5 is completed, not running (HTTP 409 conflict)\n  state: completed\n");
}

TEST(RolloutVerbTest, RollbackPrintsTheNewRolloutsId) {
  CliHarness h;
  json doc = rolloutDoc("running", {{"pending", 2}}, {{1, 0}, {1, 0}});
  doc["id"] = "ro-6";
  doc["rollback_of"] = "ro-5";
  h.transport.reply(201, doc.dump());
  auto r = h.run({"rollout", "rollback", "ro-5"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(h.transport.requests[0].method, "POST");
  EXPECT_EQ(h.transport.requests[0].path, "/api/v1/rollouts/ro-5/rollback");
  EXPECT_EQ(r.out, "ro-6\n");
  EXPECT_EQ(r.err, "rollback of ro-5 started as ro-6 (running): 2 pods in 2 waves\nFollow it: kilnctl rollout watch ro-6\n");
}

TEST(RolloutListTest, FiltersByStateAndFollowsCursorsWithAll) {
  CliHarness h;
  h.transport.reply(200, R"({"items": [{"id": "ro-7", "bundle": "b-3", "state": "halted", "halt_reason": "2 pods failed",
    "created_by": "tok-ops", "created_at_ms": 1767225600000, "started_at_ms": 1767225660000, "finished_at_ms": null,
    "pods": 40}], "next_cursor": "c1"})");
  h.transport.reply(200, R"({"items": [{"id": "ro-2", "bundle": "b-1", "state": "halted", "halt_reason": "",
    "created_by": "tok-ops", "created_at_ms": 1767225600000, "started_at_ms": null, "finished_at_ms": null,
    "pods": 3}], "next_cursor": null})");
  auto r = h.run({"rollout", "list", "--state", "halted", "--all"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  ASSERT_EQ(h.transport.requests.size(), 2u);
  EXPECT_EQ(h.transport.requests[0].query, (Query{{"limit", "1000"}, {"state", "halted"}}));
  EXPECT_EQ(h.transport.requests[1].query, (Query{{"limit", "1000"}, {"state", "halted"}, {"cursor", "c1"}}));
  EXPECT_EQ(r.out,
            "ID    BUNDLE  STATE   PODS  CREATED               BY       STARTED               FINISHED  HALT_REASON\n"
            "ro-7  b-3     halted  40    2026-01-01T00:00:00Z  tok-ops  2026-01-01T00:01:00Z  -         2 pods failed\n"
            "ro-2  b-1     halted  3     2026-01-01T00:00:00Z  tok-ops  -                     -         -\n");
}

TEST(RolloutShowTest, RendersStateWavesCountsWaitingDurationsEtaAndEvents) {
  CliHarness h;
  json doc = rolloutDoc("halted", {{"succeeded", 4}, {"failed", 2}, {"upgrading", 1}, {"pending", 13}}, {{1, 1}, {4, 4}, {15, 1}},
                        json::parse(R"([{"id": 9, "at_ms": 1767232800000, "pod": "prn-b02-p0004", "kind": "failed",
                                         "message": "the upgrade failed on every host: exit 3"}])"),
                        "2 pods failed; the failure budget allows 1");
  doc["waiting"] = {{"budget", 13}};
  h.transport.reply(200, doc.dump());
  auto r = h.run({"rollout", "show", "ro-5"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(h.transport.requests[0].path, "/api/v1/rollouts/ro-5");
  EXPECT_EQ(r.out,
            "id:           ro-5\n"
            "bundle:       gb200-fw@2026.03 (b-3)\n"
            "state:        halted\n"
            "halt reason:  2 pods failed; the failure budget allows 1\n"
            "created:      2026-01-01T00:00:00Z by tok-ops\n"
            "started:      2026-01-01T00:01:00Z\n"
            "finished:     -\n"
            "selector:     sites prn\n"
            "policy:       canary 1, waves 10%,50%,100%, soak 10m, 2 pods at once, at most 25% of a building down, "
            "allocated pods: wait, halt when more than 1 pod fails, 2 rebooting per building, order spread\n"
            "pods:         20 pods: 4 succeeded, 2 failed; 1 in flight (1 upgrading); 13 pending\n"
            "pod time:     P50 1h42m, P90 2h05m (6 pods finished)\n"
            "ETA:          3h10m\n"
            "\n"
            "Waves:\n"
            "WAVE    PODS  FINISHED  STATE    PROGRESS\n"
            "canary  1     1         done     [####################] 1/1\n"
            "wave 1  4     4         done     [####################] 4/4\n"
            "wave 2  15    1         current  [#-------------------] 1/15\n"
            "\n"
            "Why pods wait:\n"
            "REASON  PODS\n"
            "budget  13\n"
            "\n"
            "Recent events:\n"
            "TIME                  POD            KIND    MESSAGE\n"
            "2026-01-01T02:00:00Z  prn-b02-p0004  failed  the upgrade failed on every host: exit 3\n");
}

TEST(RolloutShowTest, PodsAddsARowPerPod) {
  CliHarness h;
  h.transport.reply(200, rolloutDoc("running", {{"succeeded", 1}, {"pending", 1}}, {{1, 1}, {1, 0}}).dump());
  h.transport.reply(200, R"J({"items": [
    {"pod": "prn-b01-p0001", "building": "b01", "wave": 0, "phase": "succeeded", "waiting_reason": "",
     "message": "18 hosts back in service (72 GPUs)", "attempt": 1, "run_id": "run-10", "validation_run_id": "run-11",
     "started_at_ms": 1767225600000, "finished_at_ms": 1767231720000, "duration_s": 6120.0},
    {"pod": "prn-b02-p0001", "building": "b02", "wave": 1, "phase": "pending",
     "waiting_reason": "soak: waiting 600 s after the previous wave", "message": "", "attempt": 0, "run_id": "",
     "validation_run_id": "", "started_at_ms": null, "finished_at_ms": null, "duration_s": null}], "next_cursor": null})J");
  auto r = h.run({"rollout", "show", "ro-5", "--pods"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  ASSERT_EQ(h.transport.requests.size(), 2u);
  EXPECT_EQ(h.transport.requests[1].path, "/api/v1/rollouts/ro-5/pods");
  const std::string table =
      "Pods:\n"
      "POD            BUILDING  WAVE    PHASE      ATTEMPT  DURATION  RUNS           WAITING OR MESSAGE\n"
      "prn-b01-p0001  b01       canary  succeeded  1        1h42m     run-10 run-11  18 hosts back in service (72 GPUs)\n"
      "prn-b02-p0001  b02       wave 1  pending    0        -         -              soak: waiting 600 s after the previous wave\n";
  ASSERT_GE(r.out.size(), table.size());
  EXPECT_EQ(r.out.substr(r.out.size() - table.size()), table) << r.out;

  CliHarness j;
  j.transport.reply(200, rolloutDoc("running", {{"pending", 1}}, {{1, 0}}).dump());
  j.transport.reply(200, R"({"items": [{"pod": "p1"}], "next_cursor": null})");
  auto jr = j.run({"--json", "rollout", "show", "ro-5", "--pods"});
  ASSERT_EQ(jr.code, kExitOk) << jr.err;
  EXPECT_EQ(json::parse(jr.out)["pods"], json::parse(R"([{"pod": "p1"}])"));
}

TEST(RolloutShowTest, UnknownRolloutIsAFailedCall) {
  CliHarness h;
  h.transport.reply(404, R"({"error": {"code": "not_found", "message": "no rollout 'ro-9'", "details": {}}})");
  auto r = h.run({"rollout", "show", "ro-9"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_EQ(r.err, "kilnctl: no rollout 'ro-9' (HTTP 404 not_found)\n");
}

}  // namespace
}  // namespace kiln::cli
