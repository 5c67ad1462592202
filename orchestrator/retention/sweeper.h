#pragma once
// The thin driver of retention (retention.h): one sweep asks the pure rule for each kind's
// cutoff and deletes through the store in batches, each its own short transaction, until a batch
// comes back short or the sweep's share for that kind is spent (what is left waits for the next
// sweep: a first sweep over a year of history must not hold the database for an hour). Audit
// records are appended to the export and flushed before the batch that held them is deleted;
// an export that fails stops the audit's share of the sweep and deletes nothing of it.
//
// kilnd runs sweep() on a thread of its own, on the leader replica only, every
// --retention-interval; tests call it by hand.

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/logger.h"
#include "common/result.h"
#include "orchestrator/retention/retention.h"
#include "orchestrator/retention/retention_store.h"

namespace kiln::retention {

// Where audit records go before they are deleted. append() returns once the lines are on disk
// (or fails, and then nothing may be deleted).
class AuditExport {
 public:
  virtual ~AuditExport() = default;
  virtual Status append(const std::vector<AuditLine>& lines) = 0;
};

// JSON lines in DIR/audit-YYYY-MM.jsonl (the month of the sweep, UTC), appended and fsync'd.
// A record exported twice (kilnd died between the flush and the delete) has the same id in both
// lines: a reader keeps the first of each id.
class FileAuditExport final : public AuditExport {
 public:
  FileAuditExport(std::string dir, Clock& clock) : dir_(std::move(dir)), clock_(clock) {}
  Status append(const std::vector<AuditLine>& lines) override;
  // The file this month's lines go to.
  std::string currentFile() const;

 private:
  std::string dir_;
  Clock& clock_;
};

struct SweeperOptions {
  int run_batch = 20;    // runs per transaction (a pre-job run of 8,192 hosts is ~100k rows)
  int row_batch = 5000;  // events, keys, audit records per transaction
  int max_batches = 50;  // per kind per sweep
};

struct SweepResult {
  std::map<Kind, int> deleted;
  int errors = 0;
  int total() const {
    int n = 0;
    for (const auto& [_, d] : deleted) n += d;
    return n;
  }
};

class Sweeper {
 public:
  // `audit_export` may be null: the audit log is then never pruned.
  Sweeper(RetentionStore& store, AuditExport* audit_export, Policy policy, Clock& clock, Logger& log,
          SweeperOptions options = {});

  SweepResult sweep();
  // kiln_retention_deleted_total{kind}, kiln_retention_errors_total,
  // kiln_retention_last_sweep_timestamp_seconds (0 before the first sweep on this replica).
  std::string metrics() const;
  const Policy& policy() const { return policy_; }

 private:
  int sweepKind(Kind kind, TimePoint before, SweepResult& r);
  int sweepAudit(TimePoint before, SweepResult& r);

  RetentionStore& store_;
  AuditExport* export_;
  Policy policy_;
  Clock& clock_;
  Logger& log_;
  SweeperOptions options_;
  mutable std::mutex mu_;
  std::map<Kind, std::uint64_t> deleted_total_;
  std::uint64_t errors_total_ = 0;
  double last_sweep_ = 0;
};

}  // namespace kiln::retention
