#pragma once
// An agent's step report (POST /api/v1/assignments/{id}/result, docs/agent-protocol.md) decoded
// into typed values, once, at the edge. Pure and thread-safe.

#include <cstdint>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "orchestrator/runs/engine.h"

namespace kiln::runs {

struct StepReport {
  int lease = 0;
  bool ready = false;  // the agent holds no other step: hand out its next one with the answer
  StepResult result;
};

// Decodes a report body. Every field the protocol names is checked for its type when present and
// not null (a field that is absent or null takes its documented default); fields it does not name
// (boot_id, inventory, stdout_bytes, ...) are ignored, so a newer agent still reports.
// Errors: kInvalidContent with one FieldError per bad field (`lease` required, a whole number
// from 0 to 2^31-1), message naming the first.
Result<StepReport> decodeStepReport(const nlohmann::json& body);

// A stored report (already decoded once) as a StepResult; `tails`: also the output tails.
// Lenient: a field of the wrong type takes its default (rows written by older kilnd versions).
StepResult storedStepResult(const nlohmann::json& body, bool tails = true);

}  // namespace kiln::runs
