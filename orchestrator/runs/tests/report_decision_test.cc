// The rules of a report batch (orchestrator/runs/report_decision.h), without a store: which
// report is live, a duplicate, cancelled or stale, which group takes which reports in what
// order, who gets a next step. Both RunStores apply these; the contract suite checks the stores.

#include "orchestrator/runs/report_decision.h"

#include <gtest/gtest.h>

namespace kiln::runs {
namespace {

using nlohmann::json;
using V = ReportVerdict;

const json kBody = json::object();

ReportItem report(const std::string& id, const std::string& host, int lease, bool claim_next = false) {
  ReportItem it;
  it.assignment_id = id;
  it.host = host;
  it.lease = lease;
  it.result = &kBody;
  it.claim_next = claim_next;
  return it;
}

LockedAssignment row(const std::string& host, const std::string& state, int lease, const std::string& run = "r-1",
                     const std::string& group = "g") {
  return {host, run, group, state, lease};
}

TEST(ReportDecisionTest, EachVerdictFromTheRowAndTheLease) {
  const std::map<std::string, LockedAssignment> rows{
      {"a-live", row("h1", "dispatched", 2)},  {"a-old", row("h1", "dispatched", 3)},
      {"a-done", row("h1", "done", 2)},        {"a-done-other", row("h1", "done", 1)},
      {"a-cancel", row("h1", "cancelled", 2)}, {"a-pending", row("h1", "pending", 2)},
      {"a-lost", row("h1", "lost", 2)},        {"a-theirs", row("h2", "dispatched", 2)},
  };
  const std::vector<ReportItem> items{
      report("a-live", "h1", 2),       report("a-old", "h1", 2),    report("a-done", "h1", 2),
      report("a-done-other", "h1", 2), report("a-cancel", "h1", 7), report("a-pending", "h1", 2),
      report("a-lost", "h1", 2),       report("a-theirs", "h1", 2), report("a-nowhere", "h1", 2)};
  auto d = decideReports(items, rows);
  EXPECT_EQ(d.verdicts, (std::vector<V>{V::kAccepted, V::kStale, V::kDuplicate, V::kStale, V::kCancelled, V::kStale,
                                        V::kStale, V::kOtherHost, V::kNotFound}));
  EXPECT_EQ(refusal(V::kOtherHost, "a-theirs").code, ErrorCode::kPermissionDenied);
  EXPECT_EQ(refusal(V::kNotFound, "a-nowhere").code, ErrorCode::kNotFound);
  EXPECT_EQ(outcomeOf(V::kCancelled), ReportOutcome::kCancelled);
}

// A retry in the same batch as its first report is a duplicate of it; a report on another lease
// before the live one does not hide it (the bug the contract suite found in the SQL).
TEST(ReportDecisionTest, TheFirstReportOfALiveLeaseWinsInBatchOrder) {
  const std::map<std::string, LockedAssignment> rows{{"a", row("h1", "dispatched", 4)}};
  auto d = decideReports({report("a", "h1", 3), report("a", "h1", 4), report("a", "h1", 4)}, rows);
  EXPECT_EQ(d.verdicts, (std::vector<V>{V::kStale, V::kAccepted, V::kDuplicate}));
  ASSERT_EQ(d.groups.size(), 1u);
  EXPECT_EQ(d.groups[0].second, (std::vector<std::size_t>{1}));
  // A step cancelled under a report already accepted in the batch cannot be: once done, done.
  auto cancelled = decideReports({report("c", "h1", 1), report("c", "h1", 1)}, {{"c", row("h1", "cancelled", 1)}});
  EXPECT_EQ(cancelled.verdicts, (std::vector<V>{V::kCancelled, V::kCancelled}));
}

TEST(ReportDecisionTest, GroupsInLockOrderWithTheirReportsInBatchOrder) {
  const std::map<std::string, LockedAssignment> rows{
      {"x1", row("h1", "dispatched", 1, "r-2", "p1")},
      {"x2", row("h2", "dispatched", 1, "r-1", "p9")},
      {"x3", row("h3", "dispatched", 1, "r-2", "p1")},
      {"x4", row("h4", "dispatched", 1, "r-1", "p10")},
  };
  auto d =
      decideReports({report("x1", "h1", 1), report("x2", "h2", 1), report("x3", "h3", 1), report("x4", "h4", 1)}, rows);
  ASSERT_EQ(d.groups.size(), 3u);
  EXPECT_EQ(d.groups[0].first, (std::pair<std::string, std::string>{"r-1", "p10"}));
  EXPECT_EQ(d.groups[0].second, (std::vector<std::size_t>{3}));
  EXPECT_EQ(d.groups[1].first, (std::pair<std::string, std::string>{"r-1", "p9"}));
  EXPECT_EQ(d.groups[2].first, (std::pair<std::string, std::string>{"r-2", "p1"}));
  EXPECT_EQ(d.groups[2].second, (std::vector<std::size_t>{0, 2}));
}

// The next step goes with a host's last report that is not stale or refused.
TEST(ReportDecisionTest, NextStepsGoWithEachHostsLastLiveOrSettledReport) {
  const std::map<std::string, LockedAssignment> rows{
      {"a", row("h1", "dispatched", 1)}, {"b", row("h1", "done", 1)},       {"c", row("h2", "pending", 1)},
      {"d", row("h3", "cancelled", 1)},  {"e", row("h9", "dispatched", 1)},
  };
  auto d = decideReports({report("a", "h1", 1, true), report("b", "h1", 1, true), report("c", "h2", 1, true),
                          report("d", "h3", 1, true), report("e", "h4", 1, true), report("z", "h5", 1, true)},
                         rows);
  EXPECT_EQ(d.claim_for, (std::map<std::string, std::size_t>{{"h1", 1}, {"h3", 3}}));
}

// A group's accepted reports go through their fns in order, the effects appended, the last
// timer kept, each transition by its own reporting agent; an fn's error is the batch's.
TEST(ReportDecisionTest, MergesAGroupsReportsInOrder) {
  std::vector<std::string> seen;
  auto fn = [&](const std::string& tag, std::optional<TimePoint> wake) {
    return [&seen, tag, wake](const RunRow&, GroupState g) -> Result<GroupUpdate> {
      seen.push_back(tag);
      GroupUpdate u{std::move(g), {}, {}};
      u.effects.cancel_assignments.push_back("cancel-" + tag);
      u.effects.device_versions.push_back({"s-" + tag, "nvswitch", "1." + tag, "h"});
      u.effects.next_wakeup = wake;
      u.transitions.push_back({"host-" + tag, core::HostAction::kBurnInPass, std::nullopt, tag});
      return u;
    };
  };
  std::vector<ReportItem> items{report("a", "h1", 1), report("b", "h2", 1), report("c", "h3", 1)};
  items[0].fn = fn("a", TimePoint{std::chrono::seconds(5)});
  items[1].fn = fn("b", std::nullopt);
  items[2].fn = fn("c", TimePoint{std::chrono::seconds(9)});
  auto m = mergeReports(RunRow{}, GroupState{}, items, {2, 0});
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_EQ(seen, (std::vector<std::string>{"c", "a"}));
  EXPECT_EQ(m->update.effects.cancel_assignments, (std::vector<std::string>{"cancel-c", "cancel-a"}));
  // A read-back's versions are written with the batch: none is dropped by the merge.
  ASSERT_EQ(m->update.effects.device_versions.size(), 2u);
  EXPECT_EQ(m->update.effects.device_versions[0].device, "s-c");
  EXPECT_EQ(m->update.effects.next_wakeup, TimePoint{std::chrono::seconds(5)});
  ASSERT_EQ(m->transitions.size(), 2u);
  EXPECT_EQ(m->transitions[0].second.token_id, "agent:h3");
  EXPECT_TRUE(m->update.transitions.empty());

  orderTransitions(m->transitions);
  EXPECT_EQ(m->transitions[0].first.host, "host-a");

  items[0].fn = [](const RunRow&, GroupState) -> Result<GroupUpdate> { return Error(ErrorCode::kInternal, "bad"); };
  EXPECT_FALSE(mergeReports(RunRow{}, GroupState{}, items, {2, 0}).ok());
}

}  // namespace
}  // namespace kiln::runs
