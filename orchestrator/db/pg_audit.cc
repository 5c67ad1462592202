#include "orchestrator/db/pg_audit.h"

#include <algorithm>
#include <string>

#include "orchestrator/db/pg_internal.h"

namespace kiln::db {
namespace {

// actor_name: the token's name when the actor is a token id, else the actor as stored (system
// actors such as "system", "kilnd" or "agent:<host>" name themselves). tokens.id is COLLATE "C"
// and audit_log.actor is not: the explicit collation settles which one the join compares in.
constexpr const char* kAuditSelect =
    "SELECT a.id, extract(epoch from a.at)::float8, a.actor, coalesce(t.name, a.actor), a.action, a.target,"
    " a.details::text"
    " FROM audit_log a LEFT JOIN tokens t ON t.id = a.actor COLLATE \"C\"";

// LIKE's wildcards in a prefix taken literally.
std::string likePrefix(const std::string& prefix) {
  std::string out;
  for (char c : prefix) {
    if (c == '%' || c == '_' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out + "%";
}

}  // namespace

core::AuditPage listAuditIn(pqxx::transaction_base& txn, const core::AuditFilter& f) {
  std::vector<std::string> params;
  std::string where;
  auto add = [&](const std::string& fragment, const std::string& value) {
    params.push_back(value);
    std::string sql = fragment;
    sql.replace(sql.find('?'), 1, "$" + std::to_string(params.size()));
    where += (where.empty() ? " WHERE " : " AND ") + sql;
  };
  if (!f.actor.empty()) add("a.actor = ?", f.actor);
  if (!f.action.empty()) {
    // A prefix "rollout." is served by audit_log_action_id (text_pattern_ops, 0014).
    if (f.action.back() == '.') add("a.action LIKE ?", likePrefix(f.action));
    else add("a.action = ?", f.action);
  }
  if (!f.target.empty()) add("a.target = ?", f.target);
  if (f.since) add("a.at >= to_timestamp(?::float8)", std::to_string(toEpoch(*f.since)));
  if (f.until) add("a.at < to_timestamp(?::float8)", std::to_string(toEpoch(*f.until)));
  if (f.before_id) add("a.id < ?::bigint", std::to_string(*f.before_id));
  const int limit = std::clamp(f.limit, 1, 1000);
  params.push_back(std::to_string(limit + 1));
  const std::string sql = std::string(kAuditSelect) + where + " ORDER BY a.id DESC LIMIT $" +
                          std::to_string(params.size());
  core::AuditPage page;
  for (const auto& r : txn.exec_params(sql, pqxx::prepare::make_dynamic_params(params))) {
    if (static_cast<int>(page.items.size()) == limit) {
      page.more = true;
      break;
    }
    core::AuditRecord& a = page.items.emplace_back();
    a.id = r[0].as<std::int64_t>();
    a.at = fromEpoch(r[1].as<double>());
    a.actor = r[2].as<std::string>();
    a.actor_name = r[3].as<std::string>();
    a.action = r[4].as<std::string>();
    a.target = r[5].as<std::string>();
    a.details_json = r[6].as<std::string>();
  }
  return page;
}

std::vector<core::ActorName> actorNamesIn(pqxx::transaction_base& txn) {
  std::vector<core::ActorName> out;
  for (const auto& r : txn.exec("SELECT id, name FROM tokens WHERE role <> 'agent' ORDER BY id"))
    out.push_back({r[0].as<std::string>(), r[1].as<std::string>()});
  return out;
}

}  // namespace kiln::db
