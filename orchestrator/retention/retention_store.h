#pragma once
// What retention (retention.h) asks of the database: delete what is old enough, a batch at a
// time, and read the audit records to export before they go. The fake is
// testing/fake_retention_store.h; PostgreSQL's is db/pg_retention_store.h; one contract suite
// (db/tests/retention_store_contract_test.cc) runs both.

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "orchestrator/retention/retention.h"

namespace kiln::retention {

// One audit record as one JSON object of its own (no newline): {"id", "at" (RFC 3339), "actor",
// "action", "target", "details"}.
struct AuditLine {
  std::int64_t id = 0;
  std::string json;
};

class RetentionStore {
 public:
  virtual ~RetentionStore() = default;
  // Deletes at most `limit` of `kind`'s rows that are over and older than `before`, in one
  // transaction, oldest first; returns how many went. kRuns / kPreJobRuns count runs (each
  // with its groups, hosts, assignments, step records and live output): finished (not
  // `running`) before `before`, of purpose pre_job (kPreJobRuns) or any other (kRuns), and
  // named by no rollout that is not finished. kRolloutEvents: events of finished rollouts only.
  // kAudit is refused (kInvalidArgument): it goes through auditBefore / deleteAuditThrough.
  virtual Result<int> prune(Kind kind, TimePoint before, int limit) = 0;
  // The oldest audit records stamped before `before`, at most `limit`, by id.
  virtual Result<std::vector<AuditLine>> auditBefore(TimePoint before, int limit) = 0;
  // Deletes the audit records with id <= `through` stamped before `before`; returns how many.
  virtual Result<int> deleteAuditThrough(std::int64_t through, TimePoint before) = 0;
};

}  // namespace kiln::retention
