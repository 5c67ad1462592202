#pragma once
// The PostgreSQL implementation of retention::RetentionStore (orchestrator/retention/).

#include <memory>

#include "orchestrator/db/pg_store.h"
#include "orchestrator/retention/retention_store.h"

namespace kiln::db {

std::unique_ptr<retention::RetentionStore> makePgRetentionStore(const PgStoreOptions& options);

}  // namespace kiln::db
