// Rollout request decoding (rollout_codecs.h) and the rollout answers' shapes (rollout_views.h):
// typed values or one 422 naming every bad field; the JSON the routes send.

#include "orchestrator/api/rollout_codecs.h"
#include "orchestrator/api/rollout_documents.h"
#include "orchestrator/api/rollout_views.h"

#include <chrono>
#include <set>
#include <vector>

#include <gtest/gtest.h>

namespace kiln::api {
namespace {

using nlohmann::json;
using rollouts::Bundle;

Bundle testBundle() {
  Bundle b;
  b.id = "b-3";
  b.name = "gb200-fw";
  b.version = "1.4.0";
  b.platforms = {"catalina"};
  return b;
}

// Finds "b-3" and "gb200-fw@1.4.0"; kNotFound for the rest; "boom" is a store failure.
Result<Bundle> findBundle(const std::string& ref) {
  if (ref == "b-3" || ref == "gb200-fw@1.4.0") return testBundle();
  if (ref == "boom") return unavailable("database down");
  return notFound("no bundle '" + ref + "'");
}

std::set<std::string> paths(const Error& e) {
  std::set<std::string> out;
  for (const auto& f : e.fields) out.insert(f.path);
  return out;
}

TEST(RolloutCodecsTest, CreateBodyDecodesToATypedRequestWithTheBundleLookedUp) {
  auto r = decodeCreateRollout({{"bundle", "gb200-fw@1.4.0"},
                                {"selector", {{"pods", {"p1", "p2"}}}},
                                {"policy", {{"max_concurrent_pods", 3}}},
                                {"dry_run", true},
                                {"start", true}},
                               findBundle);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->bundle.id, "b-3");
  EXPECT_EQ(r->selector.pods, (std::vector<std::string>{"p1", "p2"}));
  EXPECT_EQ(r->policy.max_concurrent_pods, 3);
  EXPECT_TRUE(r->dry_run);
  EXPECT_TRUE(r->start);
  EXPECT_FALSE(r->allow_downgrade);
  auto defaults = decodeCreateRollout({{"bundle", "b-3"}}, findBundle);
  ASSERT_TRUE(defaults.ok()) << defaults.error();
  EXPECT_FALSE(defaults->dry_run);
  EXPECT_FALSE(defaults->start);
  EXPECT_EQ(defaults->policy, rollouts::Policy{});
}

// Issue 32: the workflow that validates each upgraded pod, chosen per rollout; it must exist.
TEST(RolloutCodecsTest, ARolloutChoosesItsValidationWorkflowWhichMustExist) {
  auto exists = [](const std::string& w) { return w == "nvlink-domain-validation"; };
  auto r = decodeCreateRollout({{"bundle", "b-3"}, {"policy", {{"validation_workflow", "nvlink-domain-validation"}}}},
                               findBundle, exists);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->policy.validation_workflow, "nvlink-domain-validation");
  EXPECT_EQ(toJson(r->policy)["validation_workflow"], "nvlink-domain-validation");
  EXPECT_FALSE(toJson(rollouts::Policy{}).contains("validation_workflow")) << "only when chosen";

  auto missing = decodeCreateRollout({{"bundle", "b-3"}, {"policy", {{"validation_workflow", "nope"}, {"soak", "x"}}}},
                                     findBundle, exists);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kInvalidContent);
  EXPECT_EQ(paths(missing.error()), (std::set<std::string>{"policy.soak"}))
      << "a policy that does not parse is reported first: " << missing.error();
  auto unknown =
      decodeCreateRollout({{"bundle", "b-3"}, {"policy", {{"validation_workflow", "nope"}}}}, findBundle, exists);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(paths(unknown.error()), (std::set<std::string>{"policy.validation_workflow"}));
  auto empty = decodeCreateRollout({{"bundle", "b-3"}, {"policy", {{"validation_workflow", ""}}}}, findBundle, exists);
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(paths(empty.error()), (std::set<std::string>{"policy.validation_workflow"}));
}

TEST(RolloutCodecsTest, EveryBadFieldOfTheCreateBodyIsInOne422TheUnknownBundleIncluded) {
  auto r = decodeCreateRollout({{"bundle", "nope@1"},
                                {"colour", "red"},
                                {"dry_run", "yes"},
                                {"allow_downgrade", "yes"},
                                {"reason", 5},
                                {"policy", {{"max_concurrent_pods", "many"}}}},
                               findBundle);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidContent);
  const auto p = paths(r.error());
  for (const char* f : {"bundle", "colour", "dry_run", "allow_downgrade", "reason"}) EXPECT_TRUE(p.count(f)) << f;
  EXPECT_GE(p.size(), 6u) << "the policy's field too";
  EXPECT_EQ(r.error().message.rfind("invalid rollout: ", 0), 0u) << r.error().message;
  EXPECT_EQ(r.error().details.count("field"), 0u);  // several fields: no one-field form

  // One bad field: details.field names it as well.
  auto one = decodeCreateRollout({{"bundle", "nope@1"}}, findBundle);
  ASSERT_FALSE(one.ok());
  EXPECT_EQ(one.error().details.at("field"), "bundle");
  EXPECT_EQ(one.error().message, "invalid rollout: bundle: no bundle 'nope@1'");
  EXPECT_EQ(decodeCreateRollout(json::object(), findBundle).error().details.at("field"), "bundle");

  auto no_reason = decodeCreateRollout({{"bundle", "b-3"}, {"allow_downgrade", true}, {"reason", "  "}}, findBundle);
  ASSERT_FALSE(no_reason.ok());
  EXPECT_EQ(no_reason.error().details.at("field"), "reason");
  auto with_reason = decodeCreateRollout({{"bundle", "b-3"}, {"allow_downgrade", true}, {"reason", "CX7 bricks"}}, findBundle);
  ASSERT_TRUE(with_reason.ok()) << with_reason.error();
  EXPECT_TRUE(with_reason->allow_downgrade);
  EXPECT_EQ(with_reason->reason, "CX7 bricks");

  EXPECT_EQ(decodeCreateRollout(json::array(), findBundle).error().code, ErrorCode::kInvalidContent);
  // A failing look-up is that failure, not a bad field.
  EXPECT_EQ(decodeCreateRollout({{"bundle", "boom"}}, findBundle).error().code, ErrorCode::kUnavailable);
}

TEST(RolloutCodecsTest, ABundleNamingAMissingWorkflowIsA422WithTheOtherBadFields) {
  const std::string sha(64, 'a');
  json doc = {{"name", "gb200-fw"},
              {"version", "1.4.0"},
              {"platforms", {"catalina"}},
              {"workflow", "no-such"},
              {"components", {{{"kind", "driver"}, {"version", "580.65.06"}, {"artifact", "https://a/d.run"}, {"sha256", sha}}}}};
  auto exists = [](const std::string& w) { return w == "firmware-upgrade"; };
  auto missing = decodeBundle(doc, exists);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kInvalidContent);
  EXPECT_EQ(missing.error().details.at("field"), "workflow");
  doc["colour"] = "red";
  auto both = decodeBundle(doc, exists);
  ASSERT_FALSE(both.ok());
  EXPECT_EQ(paths(both.error()), (std::set<std::string>{"colour", "workflow"}));
  doc.erase("colour");
  doc.erase("workflow");
  auto good = decodeBundle(doc, exists);
  ASSERT_TRUE(good.ok()) << good.error();
  EXPECT_EQ(good->workflow, "firmware-upgrade");
}

TEST(RolloutViewsTest, TheRolloutViewHasTheFieldsTheContractNames) {
  rollouts::RolloutView v;
  v.row.id = "ro-7";
  v.row.bundle_id = "b-3";
  v.row.state = rollouts::RolloutState::kRunning;
  v.row.selector.pods = {"p1"};
  v.row.plan = {{"eligible", 3}};
  v.bundle = testBundle();
  for (auto ph : rollouts::allPodPhases()) v.counts[ph] = 0;
  v.counts[rollouts::PodPhase::kSucceeded] = 2;
  v.counts[rollouts::PodPhase::kPending] = 1;
  v.total = 3;
  v.waves = {{0, 1, 1, rollouts::RolloutView::WaveState::kDone}, {1, 2, 1, rollouts::RolloutView::WaveState::kCurrent}};
  v.current_wave = 1;
  v.waiting = {{"soak", 1}};
  v.durations_count = 2;
  v.p50_s = 60;
  v.p90_s = 90;
  v.eta_s = 120.5;
  const json j = toJson(v);
  std::set<std::string> keys;
  for (const auto& [k, _] : j.items()) keys.insert(k);
  EXPECT_EQ(keys, (std::set<std::string>{"id", "bundle", "state", "halt_reason", "rollback_of", "selector", "policy",
                                         "plan", "created_by", "counts", "total", "waves", "current_wave", "waiting",
                                         "pod_durations", "eta_s", "events", "created_at", "created_at_ms",
                                         "started_at", "started_at_ms", "finished_at", "finished_at_ms"}));
  EXPECT_EQ(j["state"], "running");
  EXPECT_EQ(j["bundle"], (json{{"id", "b-3"}, {"name", "gb200-fw"}, {"version", "1.4.0"}}));
  EXPECT_TRUE(j["rollback_of"].is_null());
  EXPECT_EQ(j["counts"]["succeeded"], 2);
  EXPECT_EQ(j["counts"].size(), rollouts::allPodPhases().size());
  EXPECT_EQ(j["waves"][0], (json{{"index", 0}, {"name", "canary"}, {"pods", 1}, {"finished", 1}, {"state", "done"}}));
  EXPECT_EQ(j["waves"][1]["name"], "wave 1");
  EXPECT_EQ(j["waves"][1]["state"], "current");
  EXPECT_EQ(j["current_wave"], 1);
  EXPECT_EQ(j["waiting"], (json{{"soak", 1}}));
  EXPECT_EQ(j["pod_durations"], (json{{"count", 2}, {"p50_s", 60.0}, {"p90_s", 90.0}}));
  EXPECT_EQ(j["eta_s"], 120.5);
  EXPECT_EQ(j["events"], json::array());
  EXPECT_TRUE(j["started_at"].is_null());

  v.current_wave.reset();
  v.eta_s.reset();
  v.waiting.clear();
  v.row.rollback_of = "ro-2";
  const json k = toJson(v);
  EXPECT_TRUE(k["current_wave"].is_null());
  EXPECT_TRUE(k["eta_s"].is_null());
  EXPECT_EQ(k["waiting"], json::object());
  EXPECT_EQ(k["rollback_of"], "ro-2");

  // Created: the view; a dry run: the plan and its warnings.
  rollouts::CreateOutcome created;
  created.rollout = v;
  EXPECT_EQ(toJson(created), k);
  rollouts::CreateOutcome dry;
  dry.dry_run = true;
  dry.bundle = testBundle();
  dry.warnings = {"1 pod would move to older versions (p1)"};
  const json d = toJson(dry);
  EXPECT_EQ(d["dry_run"], true);
  EXPECT_EQ(d["warnings"], json::array({"1 pod would move to older versions (p1)"}));
  for (const char* f : {"bundle", "selector", "policy", "plan"}) EXPECT_TRUE(d.contains(f)) << f;
  dry.warnings.clear();
  EXPECT_FALSE(toJson(dry).contains("warnings"));
}

TEST(RolloutViewsTest, ComplianceCountsEveryStateAndListsPodsWithTheirComponents) {
  rollouts::ComplianceReport r;
  r.bundle = "b-3";
  for (auto c : {rollouts::Compliance::kCompliant, rollouts::Compliance::kNeedsUpgrade,
                 rollouts::Compliance::kNeedsDowngrade, rollouts::Compliance::kIncompatible})
    r.pods[c] = r.hosts[c] = 0;
  rollouts::PodCompliance pc;
  pc.pod = "p1";
  pc.state = rollouts::Compliance::kNeedsUpgrade;
  pc.hosts_needing_upgrade = 18;
  pc.components = {{"driver", "580.1", {{"570.1", 18}}}};
  r.pods[pc.state] = 1;
  r.hosts[pc.state] = 18;
  r.items.push_back({"b1", "catalina", pc});
  const json j = toJson(r);
  EXPECT_EQ(j["bundle"], "b-3");
  EXPECT_EQ(j["counts"], (json{{"compliant", 0}, {"needs_upgrade", 1}, {"needs_downgrade", 0}, {"incompatible", 0}}));
  EXPECT_EQ(j["host_counts"]["needs_upgrade"], 18);
  ASSERT_EQ(j["pods"].size(), 1u);
  EXPECT_EQ(j["pods"][0]["pod"], "p1");
  EXPECT_EQ(j["pods"][0]["building"], "b1");
  EXPECT_EQ(j["pods"][0]["state"], "needs_upgrade");
  EXPECT_EQ(j["pods"][0]["components"][0]["current"][0],
            (json{{"version", "570.1"}, {"targets", 18}, {"bundle_is", "newer"}}));
}

TEST(RolloutViewsTest, EventsHaveTheirIdTimePodKindAndMessageNewestFirstAsGiven) {
  const core::TimePoint t = core::TimePoint{} + std::chrono::milliseconds(1796113800250);  // 2026-12-01T08:30:00.250Z
  const std::vector<rollouts::RolloutEventRow> events = {
      {42, t, {"b1-p2", "upgrading", "b1-p2: 16 hosts"}},
      {41, t - std::chrono::seconds(90), {"", "running", "started by t-1"}}};
  const json j = rolloutEventsJson(events);
  EXPECT_TRUE(j["next_cursor"].is_null());
  ASSERT_EQ(j["items"].size(), 2u);
  EXPECT_EQ(j["items"][0], (json{{"id", 42}, {"at", "2026-12-01T08:30:00.250Z"}, {"at_ms", 1796113800250},
                                 {"pod", "b1-p2"}, {"kind", "upgrading"}, {"message", "b1-p2: 16 hosts"}}));
  EXPECT_EQ(j["items"][1]["id"], 41);
  EXPECT_EQ(j["items"][1]["pod"], "");  // the rollout's own event: an empty pod, not null
  EXPECT_EQ(j["items"][1]["at"], "2026-12-01T08:28:30.250Z");
  EXPECT_EQ(rolloutEventsJson({})["items"], json::array());

  // The rollout's view carries the same items.
  rollouts::RolloutView v;
  v.bundle = testBundle();
  v.events = events;
  EXPECT_EQ(toJson(v)["events"], j["items"]);
}

}  // namespace
}  // namespace kiln::api
