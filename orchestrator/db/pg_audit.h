#pragma once
// Reading the audit log and the token names (internal to orchestrator/db; PgStore calls these).

#include <pqxx/pqxx>
#include <vector>

#include "orchestrator/core/store.h"

namespace kiln::db {

// core::Store::listAudit in one statement (newest first by id, keyset on before_id).
core::AuditPage listAuditIn(pqxx::transaction_base& txn, const core::AuditFilter& filter);
// core::Store::actorNames: every token but agent tokens, by id.
std::vector<core::ActorName> actorNamesIn(pqxx::transaction_base& txn);

}  // namespace kiln::db
