#include "orchestrator/runs/report_decision.h"

#include <algorithm>
#include <set>

namespace kiln::runs {

ReportDecision decideReports(const std::vector<ReportItem>& items,
                             const std::map<std::string, LockedAssignment>& rows) {
  ReportDecision d;
  d.verdicts.resize(items.size(), ReportVerdict::kStale);
  std::map<std::pair<std::string, std::string>, std::vector<std::size_t>> by_group;
  std::set<std::string> taken;  // ids whose live lease an earlier report of the batch took
  for (std::size_t i = 0; i < items.size(); ++i) {
    const auto& it = items[i];
    auto row = rows.find(it.assignment_id);
    auto& v = d.verdicts[i];
    if (row == rows.end()) {
      v = ReportVerdict::kNotFound;
      continue;
    }
    const LockedAssignment& a = row->second;
    if (a.host != it.host) {
      v = ReportVerdict::kOtherHost;
      continue;
    }
    // The row as this batch leaves it: an accepted report made the step done on its lease.
    const bool done_here = taken.count(it.assignment_id) > 0;
    if (!done_here && a.state == "dispatched" && a.lease == it.lease) {
      v = ReportVerdict::kAccepted;
      taken.insert(it.assignment_id);
      by_group[{a.run_id, a.group_key}].push_back(i);
    } else if ((done_here || a.state == "done") && a.lease == it.lease) {
      v = ReportVerdict::kDuplicate;
    } else if (!done_here && a.state == "cancelled") {
      v = ReportVerdict::kCancelled;
    } else {
      v = ReportVerdict::kStale;
    }
    if (it.claim_next && v != ReportVerdict::kStale) d.claim_for[it.host] = i;  // refused ones `continue`d
  }
  d.groups.assign(by_group.begin(), by_group.end());
  return d;
}

Error refusal(ReportVerdict v, const std::string& assignment_id) {
  if (v == ReportVerdict::kOtherHost)
    return Error(ErrorCode::kPermissionDenied, "assignment '" + assignment_id + "' belongs to another host");
  return Error(ErrorCode::kNotFound, "no assignment '" + assignment_id + "'");
}

ReportOutcome outcomeOf(ReportVerdict v) {
  switch (v) {
    case ReportVerdict::kAccepted:
      return ReportOutcome::kAccepted;
    case ReportVerdict::kDuplicate:
      return ReportOutcome::kDuplicate;
    case ReportVerdict::kCancelled:
      return ReportOutcome::kCancelled;
    default:
      return ReportOutcome::kStale;
  }
}

Result<MergedGroup> mergeReports(const RunRow& run, GroupState state, const std::vector<ReportItem>& items,
                                 const std::vector<std::size_t>& accepted) {
  MergedGroup m{GroupUpdate{std::move(state), {}, {}}, {}};
  auto& fx = m.update.effects;
  for (std::size_t i : accepted) {
    const auto& it = items[i];
    auto u = it.fn(run, std::move(m.update.state));
    if (!u.ok()) return u.error();
    m.update.state = std::move(u->state);
    fx.dispatches.insert(fx.dispatches.end(), u->effects.dispatches.begin(), u->effects.dispatches.end());
    fx.cancel_assignments.insert(fx.cancel_assignments.end(), u->effects.cancel_assignments.begin(),
                                 u->effects.cancel_assignments.end());
    fx.hosts_finished.insert(fx.hosts_finished.end(), u->effects.hosts_finished.begin(),
                             u->effects.hosts_finished.end());
    fx.extend_leases.insert(fx.extend_leases.end(), u->effects.extend_leases.begin(), u->effects.extend_leases.end());
    fx.device_versions.insert(fx.device_versions.end(), u->effects.device_versions.begin(),
                              u->effects.device_versions.end());
    fx.next_wakeup = u->effects.next_wakeup;  // the engine computes it from the whole group
    for (auto& t : u->transitions) m.transitions.emplace_back(std::move(t), core::Actor{"agent:" + it.host, it.host});
  }
  return m;
}

void orderTransitions(std::vector<std::pair<core::HostTransition, core::Actor>>& transitions) {
  std::stable_sort(transitions.begin(), transitions.end(),
                   [](const auto& a, const auto& b) { return a.first.host < b.first.host; });
}

}  // namespace kiln::runs
