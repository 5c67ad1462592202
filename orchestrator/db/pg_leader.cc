#include "orchestrator/db/pg_leader.h"

#include <pqxx/pqxx>

namespace kiln::db {

struct LeaderLock::Conn {
  pqxx::connection c;
  explicit Conn(const std::string& url) : c(url) {}
};

LeaderLock::LeaderLock(std::string url, long long key) : url_(std::move(url)), key_(key) {}
LeaderLock::~LeaderLock() = default;

bool LeaderLock::tryHold() {
  try {
    if (!conn_) conn_ = std::make_unique<Conn>(url_);
    pqxx::nontransaction tx(conn_->c);
    if (held_) {
      tx.exec("SELECT 1");  // still connected: the session lock is still ours
      return true;
    }
    held_ = tx.exec_params1("SELECT pg_try_advisory_lock($1)", key_)[0].as<bool>();
  } catch (const std::exception&) {
    conn_.reset();  // the session (and any lock it held) is gone
    held_ = false;
  }
  return held_;
}

}  // namespace kiln::db
