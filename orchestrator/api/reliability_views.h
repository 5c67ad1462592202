#pragma once
// The REST representation of the reliability ledger (json_views.h's convention: one place for
// the shapes api/openapi.yaml describes). ReliabilityService answers values
// (orchestrator/reliability/reliability_service.h); only these functions make JSON of them.

#include <nlohmann/json.hpp>

#include "orchestrator/core/store.h"
#include "orchestrator/reliability/reliability_service.h"

namespace kiln::api {

// POST /interruptions: the interruption as recorded (pod and job_gpus null when absent) and
// created.
nlohmann::json toJson(const reliability::RecordOutcome& r);
// GET /interruptions: {items: [the interruption with candidate], next_cursor}.
nlohmann::json interruptionListJson(const core::Page<reliability::Interruption>& page);
// GET /reliability: the window, scope, totals, north star, causes, weekly series and lemons;
// rates null where reliability::Rates has none.
nlohmann::json toJson(const reliability::ReliabilityReport& r);

}  // namespace kiln::api
