#pragma once
// The rules of a batch of agents' step reports (RunStore::reportBatch), as pure functions: the
// store locks the reported assignments' groups, reads the assignments, and persists what these
// decide. PgRunStore and the in-memory FakeRunStore both call them, so the two cannot disagree
// on which report is live, a duplicate, cancelled or stale (the contract suite in
// orchestrator/db/tests/run_store_contract_test.cc runs both). Thread-safe.

#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "orchestrator/runs/run_store.h"

namespace kiln::runs {

// A reported assignment as the store read it, after its group's row lock was taken: every
// writer of a dispatched assignment's state or lease holds that lock (a claim moves only
// pending ones, which no live report names), and the store's write is guarded as decided.
struct LockedAssignment {
  std::string host, run_id, group_key, state;
  int lease = 0;
};

enum class ReportVerdict {
  kNotFound,   // no such assignment
  kOtherHost,  // the assignment belongs to another host
  kAccepted,   // the live lease's first report: the step is done with this result
  kDuplicate,  // the step is already done on this lease (an agent's retry)
  kCancelled,  // the step was cancelled: its result is kept if it has none yet
  kStale,      // another lease, or a step no agent holds
};

struct ReportDecision {
  std::vector<ReportVerdict> verdicts;  // one per item, in order
  // The groups with accepted reports, in (run, group) order (the store's lock order), each with
  // its accepted items in batch order: their GroupFns are applied in that order, the group's
  // state written once.
  std::vector<std::pair<std::pair<std::string, std::string>, std::vector<std::size_t>>> groups;
  // The host of each item with claim_next that is not stale or refused, and the item whose
  // reply carries the host's next step (its last in the batch).
  std::map<std::string, std::size_t> claim_for;
};

// `rows`: the reported assignments that exist, by id. A report is accepted when its
// assignment is dispatched on its lease and no earlier report of the batch took that lease; a
// later one of the same id and lease is then a duplicate.
ReportDecision decideReports(const std::vector<ReportItem>& items, const std::map<std::string, LockedAssignment>& rows);

// The error a refused report answers (kNotFound, kOtherHost); other verdicts are replies.
Error refusal(ReportVerdict v, const std::string& assignment_id);
ReportOutcome outcomeOf(ReportVerdict v);

// One group's accepted reports through their GroupFns, in order: the group's new state, the
// effects of all of them (dispatches, cancellations and finished hosts in order, the last
// timer), and the host transitions each asked for, by the reporting agent. An fn's error is the
// batch's (nothing of it may be written).
struct MergedGroup {
  GroupUpdate update;
  std::vector<std::pair<core::HostTransition, core::Actor>> transitions;
};
Result<MergedGroup> mergeReports(const RunRow& run, GroupState state, const std::vector<ReportItem>& items,
                                 const std::vector<std::size_t>& accepted);

// The batch's host transitions in host order (each host's in its own order), so that
// concurrent batches lock host rows, and what a transition locks after them, in one order.
void orderTransitions(std::vector<std::pair<core::HostTransition, core::Actor>>& transitions);

}  // namespace kiln::runs
