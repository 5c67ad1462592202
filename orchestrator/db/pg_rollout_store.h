#pragma once
// The PostgreSQL implementation of rollouts::RolloutStore.

#include <memory>

#include "orchestrator/db/pg_store.h"
#include "orchestrator/rollouts/rollout_store.h"

namespace kiln::db {

std::unique_ptr<rollouts::RolloutStore> makePgRolloutStore(const PgStoreOptions& options);

}  // namespace kiln::db
