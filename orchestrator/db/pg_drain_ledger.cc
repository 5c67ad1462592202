#include "orchestrator/db/pg_drain_ledger.h"

#include <nlohmann/json.hpp>

#include "orchestrator/db/pg_internal.h"
#include "orchestrator/db/pg_pool.h"

namespace kiln::db {
namespace {

using nlohmann::json;

class PgDrainLedger final : public scheduler::DrainLedger {
 public:
  explicit PgDrainLedger(const PgStoreOptions& o) : pool_(o.database_url, o.pool_size) {}

  Result<std::vector<scheduler::Drain>> list() override {
    return pool_.read<std::vector<scheduler::Drain>>([](pqxx::nontransaction& txn) -> Result<std::vector<scheduler::Drain>> {
      std::vector<scheduler::Drain> out;
      for (const auto& r : txn.exec("SELECT node, host_id, reason, extract(epoch from drained_at)::float8"
                                    " FROM scheduler_drains ORDER BY node"))
        out.push_back({r[0].as<std::string>(), r[1].as<std::string>(), r[2].as<std::string>(), fromEpoch(r[3].as<double>())});
      return out;
    });
  }

  Status put(const scheduler::Drain& d, const core::Actor& actor) override {
    auto done = pool_.transact<bool>([&](pqxx::work& txn) -> Result<bool> {
      txn.exec_params(
          "INSERT INTO scheduler_drains (node, host_id, reason, drained_at) VALUES ($1, $2, $3, to_timestamp($4))"
          " ON CONFLICT (node) DO UPDATE SET host_id = EXCLUDED.host_id, reason = EXCLUDED.reason,"
          " drained_at = EXCLUDED.drained_at",
          d.node, d.host, d.reason, toEpoch(d.at));
      writeAudit(txn, actor, "slurm.drain", d.node, json{{"host", d.host}, {"reason", d.reason}}.dump());
      return true;
    });
    if (!done.ok()) return done.error();
    return Ok{};
  }

  Status remove(const std::string& node, const std::string& action, const std::string& why,
                const core::Actor& actor) override {
    auto done = pool_.transact<bool>([&](pqxx::work& txn) -> Result<bool> {
      auto gone = txn.exec_params("DELETE FROM scheduler_drains WHERE node = $1 RETURNING host_id", node);
      if (gone.empty()) return false;
      writeAudit(txn, actor, action, node, json{{"host", gone[0][0].as<std::string>()}, {"why", why}}.dump());
      return true;
    });
    if (!done.ok()) return done.error();
    return Ok{};
  }

 private:
  PgPool pool_;
};

}  // namespace

std::unique_ptr<scheduler::DrainLedger> makePgDrainLedger(const PgStoreOptions& options) {
  return std::make_unique<PgDrainLedger>(options);
}

}  // namespace kiln::db
