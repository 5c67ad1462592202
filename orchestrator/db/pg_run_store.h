#pragma once
// The PostgreSQL implementation of runs::RunStore.

#include <memory>

#include "orchestrator/db/pg_store.h"
#include "orchestrator/runs/run_store.h"

namespace kiln::db {

std::unique_ptr<runs::RunStore> makePgRunStore(const PgStoreOptions& options);

}  // namespace kiln::db
