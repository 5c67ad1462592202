#pragma once
// The PostgreSQL implementation of core::Store. libpqxx stays inside orchestrator/db.

#include <memory>
#include <string>

#include "orchestrator/core/store.h"

namespace kiln::db {

struct PgStoreOptions {
  std::string database_url;
  int pool_size = 8;
};

std::unique_ptr<core::Store> makePgStore(const PgStoreOptions& options);

}  // namespace kiln::db
