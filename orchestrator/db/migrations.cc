#include "orchestrator/db/migrations.h"

#include <pqxx/pqxx>

#include "orchestrator/db/pg_pool.h"

namespace kiln::db {
namespace {

// Any constant shared by every kilnd; "kiln" in ASCII.
constexpr long long kMigrationLockKey = 0x6b696c6e;

}  // namespace

Result<MigrationReport> applyMigrations(const std::string& url) {
  try {
    pqxx::connection conn(url);
    pqxx::work txn(conn);
    txn.exec_params("SELECT pg_advisory_xact_lock($1)", kMigrationLockKey);
    txn.exec0(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " version int PRIMARY KEY, name text NOT NULL,"
        " applied_at timestamptz NOT NULL DEFAULT now())");
    MigrationReport report;
    report.from_version = txn.exec1("SELECT coalesce(max(version), 0) FROM schema_migrations")[0]
                              .as<int>();
    const auto& all = embeddedMigrations();
    const int known = all.empty() ? 0 : all.back().version;
    if (report.from_version > known) {
      txn.abort();
      return conflict("the database schema is version " + std::to_string(report.from_version) +
                      " but this kilnd knows only up to " + std::to_string(known) +
                      ": run a newer kilnd");
    }
    for (const auto& m : all) {
      if (m.version <= report.from_version) continue;
      txn.exec(m.sql);
      txn.exec_params("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", m.version,
                      m.name);
      report.applied.push_back(m.name);
    }
    report.to_version = std::max(known, report.from_version);
    txn.commit();
    return report;
  } catch (const std::exception& e) {
    return translatePqxxError(e);
  }
}

}  // namespace kiln::db
