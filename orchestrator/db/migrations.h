#pragma once
// Numbered schema migrations (db/migrations/NNNN_name.sql, embedded at build time).

#include <string>
#include <vector>

#include "common/result.h"

namespace kiln::db {

struct Migration {
  int version;
  std::string name;
  std::string sql;
};

const std::vector<Migration>& embeddedMigrations();

struct MigrationReport {
  int from_version = 0;
  int to_version = 0;
  std::vector<std::string> applied;
};

// Applies every missing migration in one transaction under an advisory lock, so two kilnd
// starting at once apply each migration exactly once. Refuses (kConflict) a database whose
// schema is newer than this binary knows.
Result<MigrationReport> applyMigrations(const std::string& database_url);

}  // namespace kiln::db
