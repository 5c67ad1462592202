#pragma once
// The PostgreSQL implementation of reliability::ReliabilityStore.

#include <memory>

#include "orchestrator/db/pg_store.h"
#include "orchestrator/reliability/reliability_service.h"

namespace kiln::db {

std::unique_ptr<reliability::ReliabilityStore> makePgReliabilityStore(const PgStoreOptions& options);

}  // namespace kiln::db
