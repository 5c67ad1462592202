#pragma once
// The PostgreSQL implementation of runs::LiveOutputStore: table step_live_output (migration
// 0013, unlogged), one row per assignment updated in place. Rows of finished assignments are
// swept at most every `sweep_interval` by whichever replica appends next.

#include <chrono>
#include <memory>

#include "orchestrator/db/pg_store.h"
#include "orchestrator/runs/live_output.h"

namespace kiln::db {

struct PgLiveOutputOptions {
  // A finished assignment's live output is deleted once it has not changed for this long (the
  // run view then shows the tails of the step's result).
  std::chrono::seconds keep_after_done{600};
  std::chrono::seconds sweep_interval{300};
};

std::unique_ptr<runs::LiveOutputStore> makePgLiveOutputStore(const PgStoreOptions& options,
                                                             PgLiveOutputOptions live = {});

}  // namespace kiln::db
