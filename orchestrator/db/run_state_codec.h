#pragma once
// How the run store keeps the run engine's state: a group's state (run_groups.state) and a step
// record (run_step_records.record) as JSON documents. The format is the store's own (the engine
// has none); rows written by older versions stay readable: a state without `stopping` or
// `leader_outcomes` (before the step log, schema 16, every record was embedded in the state) is
// read as such. A document that does not parse fails its read (kInternal, "corrupt run state" or
// "corrupt step record"), never an exception. Pure, thread-safe.

#include <nlohmann/json.hpp>

#include "common/agent_protocol.h"
#include "common/result.h"
#include "orchestrator/runs/engine.h"

namespace kiln::db {

// kWith embeds each host's pending records (what a state held before the step log; tests);
// the store writes kWithout and keeps the records in its step log. groupFromStored reads
// both, and reads the embedded records of an old state as pending records, taking each step's
// newest initial-run record as its leader outcome when the state has none.
enum class Records { kWith, kWithout };
nlohmann::json storedGroup(const runs::GroupState& g, Records records);
Result<runs::GroupState> groupFromStored(const nlohmann::json& j);

nlohmann::json storedRecord(const runs::StepRecord& r);
Result<runs::StepRecord> recordFromStored(const nlohmann::json& j);

// The artifacts of an assignment (assignments.artifacts, schema 20) in the agent protocol's own
// field names ([{"url", "sha256", "checksums", "signature"}]); null for none, so that a step
// without artifacts stores NULL. artifactsFromStored reads null as none; anything that is not
// such a list fails (kInternal, "corrupt assignment artifacts").
nlohmann::json storedArtifacts(const std::vector<protocol::ArtifactRef>& artifacts);
Result<std::vector<protocol::ArtifactRef>> artifactsFromStored(const nlohmann::json& j);

}  // namespace kiln::db
