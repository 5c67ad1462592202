#pragma once
// The PostgreSQL implementation of scheduler::DrainLedger (table scheduler_drains).

#include <memory>

#include "orchestrator/db/pg_store.h"
#include "orchestrator/scheduler/drain_ledger.h"

namespace kiln::db {

std::unique_ptr<scheduler::DrainLedger> makePgDrainLedger(const PgStoreOptions& options);

}  // namespace kiln::db
