#pragma once
// Transaction helpers shared by the PostgreSQL stores (internal to orchestrator/db).

#include <pqxx/pqxx>
#include <optional>
#include <string>
#include <vector>

#include "orchestrator/core/store.h"

namespace kiln::db {

core::TimePoint fromEpoch(double seconds);
double toEpoch(core::TimePoint t);
// A nullable "extract(epoch from ...)::float8" column.
std::optional<core::TimePoint> optEpoch(const pqxx::field& f);
// "Newest first" lists page by a number below the cursor; an empty cursor starts at the top.
Result<std::int64_t> numericCursor(const std::string& cursor);
// Columns of a host summary, for "SELECT <kHostColumns> FROM hosts h JOIN pods p ON p.id = h.pod_id".
extern const char* const kHostColumns;
// How many columns kHostColumns is: a query's own columns after it start at this index.
inline constexpr int kHostColumnCount = 13;
core::HostSummary hostFromRow(const pqxx::row& r);
// A host state column; an unknown name throws std::runtime_error, which PgPool's transaction
// turns into a kInternal error.
core::HostState hostStateColumn(const pqxx::field& f);
// The same for a state name read some other way (a JSON aggregate); `where` names it in the error.
core::HostState hostStateFromDb(const std::string& name, const std::string& where);
// A pod state column, the same way (the pods table has no CHECK on it: refreshPodState writes
// it from core::podState).
core::PodState podStateColumn(const pqxx::field& f, const std::string& pod_id);
void writeAudit(pqxx::work& txn, const core::Actor& actor, const std::string& action,
                const std::string& target, const std::string& details_json);
// Records a create's Idempotency-Key with the object it made, in the creating transaction.
// The error named core::kIdempotencyKeyTaken (kConflict) when another request took the key
// first: the caller rolls back and answers as for a retry. Nothing without a claim.
Status claimIdempotencyKey(pqxx::work& txn, const std::optional<core::IdempotencyClaim>& claim,
                           const std::string& object_id, const core::Actor& actor);
// Recomputes a pod's state from its hosts.
void refreshPodState(pqxx::work& txn, const std::string& pod_id);
// One lifecycle transition under the host's row lock, checked by core::nextState, with its
// host event and audit record, and the pod's state refreshed (an allocated host that fails is
// an interruption candidate). kNotFound, kConflict. applyTransitions of one.
Result<core::HostState> applyTransition(pqxx::work& txn, const core::HostTransition& t, const core::Actor& actor);
// Each of `ts` in order, as one after another (a host may appear more than once: each moves from
// where the one before left it), in a fixed number of statements: every host's row lock up
// front (in id order), one write each for the hosts, their events and the audit records, then
// each pod's state once. One outcome per transition.
std::vector<Result<core::HostState>> applyTransitions(pqxx::work& txn, const std::vector<core::HostTransition>& ts,
                                                      const core::Actor& actor);

}  // namespace kiln::db
