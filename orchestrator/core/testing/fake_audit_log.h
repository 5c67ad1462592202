#pragma once
// A complete core::AuditLog for tests, with core::Store's reads of it (listAudit, actorNames)
// and the tokens those reads name actors by, in memory. The PostgreSQL store keeps the same log
// in audit_log and tokens (orchestrator/db/pg_audit.cc); orchestrator/db/tests/
// audit_log_contract_test.cc runs both through one suite. Other fakes that write audit records
// (a fake store's writes) take a FakeAuditLog* and write here, as their SQL does into audit_log.
// Thread-safe.

#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "orchestrator/core/store.h"

namespace kiln::core::testing {

class FakeAuditLog final : public AuditLog {
 public:
  // Records are stamped with `clock`'s now (PostgreSQL: the transaction's now()).
  explicit FakeAuditLog(Clock& clock) : clock_(clock) {}

  // Ids count up from 1 in the order of the writes. An empty `details_json` is stored as "{}",
  // as the SQL's default.
  Status audit(const Actor& actor, const std::string& action, const std::string& target,
               const std::string& details_json) override {
    std::lock_guard lock(mu_);
    AuditRecord r;
    r.id = static_cast<std::int64_t>(records_.size()) + 1;
    r.at = clock_.now();
    r.actor = actor.token_id;
    r.action = action;
    r.target = target;
    r.details_json = details_json.empty() ? "{}" : details_json;
    records_.push_back(std::move(r));
    return Ok{};
  }

  // core::Store::listAudit: newest first by id, every given filter matching, at most
  // filter.limit (clamped to 1..1000) with `more` when older records match too.
  Result<AuditPage> listAudit(const AuditFilter& f) const {
    std::lock_guard lock(mu_);
    const int limit = std::clamp(f.limit, 1, 1000);
    AuditPage page;
    for (auto it = records_.rbegin(); it != records_.rend(); ++it) {
      const AuditRecord& r = *it;
      if (!f.actor.empty() && r.actor != f.actor) continue;
      if (!f.action.empty()) {
        const bool prefix = f.action.back() == '.';
        if (prefix ? r.action.compare(0, f.action.size(), f.action) != 0 : r.action != f.action) continue;
      }
      if (!f.target.empty() && r.target != f.target) continue;
      if (f.since && r.at < *f.since) continue;
      if (f.until && !(r.at < *f.until)) continue;
      if (f.before_id && r.id >= *f.before_id) continue;
      if (static_cast<int>(page.items.size()) == limit) {
        page.more = true;
        break;
      }
      AuditRecord& out = page.items.emplace_back(r);
      auto token = tokens_.find(r.actor);
      out.actor_name = token == tokens_.end() ? r.actor : token->second.name;
    }
    return page;
  }

  // core::Store::actorNames: every token but agent tokens, by id, revoked ones included.
  Result<std::vector<ActorName>> actorNames() const {
    std::lock_guard lock(mu_);
    std::vector<ActorName> out;
    for (const auto& [id, t] : tokens_)
      if (t.role != Role::kAgent) out.push_back({id, t.name});
    return out;
  }

  // A token the store holds (only its id, name and role matter here). Writes no audit record:
  // a fake store that creates tokens writes its own "token.create".
  void addToken(const std::string& id, const std::string& name, Role role) {
    std::lock_guard lock(mu_);
    tokens_[id] = {name, role};
  }

  // Every record, oldest first, without actor names.
  std::vector<AuditRecord> records() const {
    std::lock_guard lock(mu_);
    return records_;
  }

 private:
  struct Token {
    std::string name;
    Role role = Role::kViewer;
  };

  Clock& clock_;
  mutable std::mutex mu_;
  std::vector<AuditRecord> records_;
  std::map<std::string, Token> tokens_;
};

}  // namespace kiln::core::testing
