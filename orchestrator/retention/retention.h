#pragma once
// Retention (issue 33: bounded on disk). Every table that grows with use has a rule: how long
// its rows stay once they are over. One pure decision (`cutoffs`: which rows are old enough,
// given the policy and the time), one store interface (retention_store.h, a fake beside it and
// the PostgreSQL store in db/), one thin driver (`Sweeper`, run by the leader on a thread of its
// own, in small batches so that no sweep holds a lock the report path or the controller waits
// for).
//
// What goes, and what never does:
// - runs: a finished workflow run (not `running`), with its groups, hosts, assignments, step
//   records and live output, once finished longer ago than its rule. Pre-job checks have their
//   own, shorter rule (a fleet runs one per job start). A run that a rollout not yet finished
//   names (a pod's upgrade or validation run) stays, whatever its age.
// - host_events, rollout_events (of finished rollouts only), idempotency_keys: by age.
// - audit_log: by age, and only after the records are written to the audit export (JSON lines,
//   flushed to disk) in id order: without an export directory the audit log is kept whole.
// - Never: the fleet itself, tokens, rollouts and bundles (small, and what a later rollout or an
//   audit names), the reliability ledger (interruptions, service days: the evidence of MTBI).

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"

namespace kiln::retention {

using kiln::TimePoint;

// What a rule prunes.
enum class Kind { kRuns, kPreJobRuns, kHostEvents, kAudit, kRolloutEvents, kIdempotencyKeys };
inline constexpr Kind kKinds[] = {Kind::kRuns,  Kind::kPreJobRuns,    Kind::kHostEvents,
                                  Kind::kAudit, Kind::kRolloutEvents, Kind::kIdempotencyKeys};
// "runs", "pre_job_runs", "host_events", "audit", "rollout_events", "idempotency_keys".
const char* kindName(Kind k);

struct Policy {
  // How long a kind's rows stay once over; nullopt: kept for ever. The defaults (documented in
  // docs/OPERATIONS.md "Retention"):
  std::map<Kind, std::optional<std::chrono::seconds>> keep = {
      {Kind::kRuns, std::chrono::hours(24 * 90)},           {Kind::kPreJobRuns, std::chrono::hours(24 * 14)},
      {Kind::kHostEvents, std::chrono::hours(24 * 365)},    {Kind::kAudit, std::chrono::hours(24 * 365)},
      {Kind::kRolloutEvents, std::chrono::hours(24 * 365)}, {Kind::kIdempotencyKeys, std::chrono::hours(24 * 7)},
  };
};

// Reads "--retention KIND=DURATION,..." over the defaults: DURATION like 90d, 12h, 30m, or
// "forever". kInvalidArgument naming the item for an unknown kind, a bad duration, a repeat, a
// rule under one hour (a typo of "1d" as "1m" must not empty the run history) or over 36500d
// (the cutoff, now minus the rule, must not wrap around the clock's range into the future).
Result<Policy> parsePolicy(const std::string& spec);
// "runs=90d,pre_job_runs=14d,..." (every kind, in kKinds order).
std::string describe(const Policy& p);

// The pure decision: for each kind with a rule, the time before which its rows may go. Kinds
// kept for ever are absent. `audit_exported`: whether an audit export is configured (without
// one, the audit log is never pruned).
std::map<Kind, TimePoint> cutoffs(const Policy& p, TimePoint now, bool audit_exported);

}  // namespace kiln::retention
