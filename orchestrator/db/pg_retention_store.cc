#include "orchestrator/db/pg_retention_store.h"

#include <nlohmann/json.hpp>

#include "orchestrator/db/pg_internal.h"
#include "orchestrator/db/pg_pool.h"

namespace kiln::db {
namespace {

using retention::Kind;

// A batch of finished runs, oldest first, of one purpose class ($2: pre-job checks or the rest),
// that no rollout still going names; locked so that two replicas' sweeps never take the same.
constexpr const char* kDoomedRuns =
    "SELECT w.id FROM workflow_runs w"
    " WHERE w.state <> 'running' AND w.finished_at < to_timestamp($1) AND (w.purpose = 'pre_job') = $2"
    " AND NOT EXISTS (SELECT 1 FROM rollout_pods p JOIN rollouts r ON r.id = p.rollout_id"
    "   WHERE r.finished_at IS NULL AND (p.run_id = w.id OR p.validation_run_id = w.id))"
    " ORDER BY w.finished_at LIMIT $3 FOR UPDATE OF w SKIP LOCKED";

// Each of a batch's rows, what belongs to it first ($1: the run ids as a JSON array).
constexpr const char* kRunIds = "ARRAY(SELECT jsonb_array_elements_text($1::jsonb))";

class PgRetentionStore final : public retention::RetentionStore {
 public:
  explicit PgRetentionStore(const PgStoreOptions& o) : pool_(o.database_url, o.pool_size) {}

  Result<int> prune(Kind kind, TimePoint before, int limit) override {
    if (kind == Kind::kAudit) return invalidArgument("audit records go through auditBefore and deleteAuditThrough");
    return pool_.transact<int>([&](pqxx::work& txn) -> Result<int> {
      const double cut = toEpoch(before);
      int n = 0;
      switch (kind) {
        case Kind::kRuns:
        case Kind::kPreJobRuns: {
          nlohmann::json ids = nlohmann::json::array();
          for (const auto& r : txn.exec_params(kDoomedRuns, cut, kind == Kind::kPreJobRuns, limit))
            ids.push_back(r[0].as<std::string>());
          if (ids.empty()) return 0;
          const std::string list = ids.dump();
          txn.exec_params(std::string("DELETE FROM step_live_output WHERE assignment_id IN (SELECT id FROM assignments"
                                      " WHERE run_id = ANY(") +
                              kRunIds + "))",
                          list);
          for (const char* table : {"assignments", "run_step_records", "run_groups", "run_hosts"})
            txn.exec_params(std::string("DELETE FROM ") + table + " WHERE run_id = ANY(" + kRunIds + ")", list);
          n = static_cast<int>(
              txn.exec_params(std::string("DELETE FROM workflow_runs WHERE id = ANY(") + kRunIds + ")", list)
                  .affected_rows());
          break;
        }
        case Kind::kHostEvents:
          // The rollup of hosts in service already holds these rows (schema 25's trigger guard).
          txn.exec0("SET LOCAL kiln.pruning = 'on'");
          n = static_cast<int>(txn.exec_params("DELETE FROM host_events WHERE id IN (SELECT id FROM host_events"
                                               " WHERE at < to_timestamp($1) ORDER BY id LIMIT $2)",
                                               cut, limit)
                                   .affected_rows());
          if (n > 0)
            txn.exec_params(
                "INSERT INTO retention_horizon (kind, before) VALUES ('host_events', to_timestamp($1))"
                " ON CONFLICT (kind) DO UPDATE SET before = greatest(retention_horizon.before, EXCLUDED.before)",
                cut);
          break;
        case Kind::kRolloutEvents:
          n = static_cast<int>(
              txn.exec_params("DELETE FROM rollout_events WHERE id IN (SELECT e.id FROM rollout_events e"
                              " JOIN rollouts r ON r.id = e.rollout_id WHERE r.finished_at IS NOT NULL"
                              " AND e.at < to_timestamp($1) ORDER BY e.id LIMIT $2)",
                              cut, limit)
                  .affected_rows());
          break;
        case Kind::kIdempotencyKeys:
          n = static_cast<int>(txn.exec_params("DELETE FROM idempotency_keys WHERE key IN (SELECT key FROM"
                                               " idempotency_keys WHERE created_at < to_timestamp($1)"
                                               " ORDER BY created_at LIMIT $2)",
                                               cut, limit)
                                   .affected_rows());
          break;
        case Kind::kAudit:
          break;
      }
      return n;
    });
  }

  Result<std::vector<retention::AuditLine>> auditBefore(TimePoint before, int limit) override {
    return pool_.read<std::vector<retention::AuditLine>>(
        [&](pqxx::nontransaction& txn) -> Result<std::vector<retention::AuditLine>> {
          std::vector<retention::AuditLine> out;
          for (const auto& r : txn.exec_params(
                   "SELECT id, json_build_object('id', id, 'at', to_char(at AT TIME ZONE 'UTC',"
                   " 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'), 'actor', actor, 'action', action, 'target', target,"
                   " 'details', details)::text FROM audit_log WHERE at < to_timestamp($1) ORDER BY id LIMIT $2",
                   toEpoch(before), limit))
            out.push_back({r[0].as<std::int64_t>(), r[1].as<std::string>()});
          return out;
        });
  }

  Result<int> deleteAuditThrough(std::int64_t through, TimePoint before) override {
    return pool_.transact<int>([&](pqxx::work& txn) -> Result<int> {
      return static_cast<int>(
          txn.exec_params("DELETE FROM audit_log WHERE id <= $1 AND at < to_timestamp($2)", through, toEpoch(before))
              .affected_rows());
    });
  }

 private:
  PgPool pool_;
};

}  // namespace

std::unique_ptr<retention::RetentionStore> makePgRetentionStore(const PgStoreOptions& options) {
  return std::make_unique<PgRetentionStore>(options);
}

}  // namespace kiln::db
