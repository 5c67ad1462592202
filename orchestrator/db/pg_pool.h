#pragma once
// A small pool of libpqxx connections (one open transaction per connection; a connection is
// not thread-safe). Internal to orchestrator/db: only db code includes libpqxx.

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <pqxx/pqxx>

#include "common/result.h"

namespace kiln::db {

// A statement prepared on every connection of a pool: run it with
// txn.exec_prepared(name, args...). Named constants next to the code that runs them.
struct PreparedStatement {
  std::string name, sql;
};

class PgPool {
 public:
  PgPool(std::string url, int size, std::vector<PreparedStatement> prepared = {});
  ~PgPool();

  // Runs fn in a read-write transaction and commits it. Library exceptions become Errors:
  // lost connection -> retried once on a fresh connection, then kUnavailable; unique
  // violation -> kConflict; anything else -> kInternal. fn may itself return an Error, and the
  // transaction is then rolled back.
  template <typename T>
  Result<T> transact(const std::function<Result<T>(pqxx::work&)>& fn);
  // Runs fn outside a transaction block (no BEGIN/COMMIT round trips): for a single
  // read-only statement on a hot path. Errors as transact().
  template <typename T>
  Result<T> read(const std::function<Result<T>(pqxx::nontransaction&)>& fn);

  const std::string& url() const { return url_; }

 private:
  std::unique_ptr<pqxx::connection> acquire(Error* error);
  void release(std::unique_ptr<pqxx::connection> conn);
  template <typename T, typename Txn>
  Result<T> run(const std::function<Result<T>(Txn&)>& fn, bool commit);

  std::string url_;
  int size_;
  std::vector<PreparedStatement> prepared_;
  int open_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<pqxx::connection>> idle_;
};

Error translatePqxxError(const std::exception& e);
bool isConnectionError(const std::exception& e);

template <typename T>
Result<T> PgPool::transact(const std::function<Result<T>(pqxx::work&)>& fn) {
  return run<T, pqxx::work>(fn, true);
}

template <typename T>
Result<T> PgPool::read(const std::function<Result<T>(pqxx::nontransaction&)>& fn) {
  return run<T, pqxx::nontransaction>(fn, false);
}

template <typename T, typename Txn>
Result<T> PgPool::run(const std::function<Result<T>(Txn&)>& fn, bool commit) {
  for (int attempt = 0;; ++attempt) {
    Error acquire_error;
    auto conn = acquire(&acquire_error);
    if (!conn) return acquire_error;
    try {
      // The transaction object ends before its connection goes back to the pool: a
      // nontransaction is registered on the connection until it is destroyed, and another
      // thread that took the connection meanwhile failed with "Started transaction<READ
      // COMMITTED> while nontransaction still active" (seen once in the e2e rollout test that
      // kills kilnd: a pod's staging could not start).
      Result<T> result = [&]() -> Result<T> {
        Txn txn(*conn);
        Result<T> r = fn(txn);
        if (commit) {
          if (r.ok())
            txn.commit();
          else
            txn.abort();
        }
        return r;
      }();
      release(std::move(conn));
      return result;
    } catch (const std::exception& e) {
      const bool lost = isConnectionError(e);
      if (lost) {
        std::lock_guard lock(mu_);
        --open_;  // drop the broken connection; a fresh one is opened on demand
        cv_.notify_one();
      } else {
        release(std::move(conn));
      }
      if (lost && attempt == 0) continue;
      return translatePqxxError(e);
    }
  }
}

}  // namespace kiln::db
