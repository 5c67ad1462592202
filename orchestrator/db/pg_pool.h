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

class PgPool {
 public:
  PgPool(std::string url, int size);
  ~PgPool();

  // Runs fn in a read-write transaction and commits it. Library exceptions become Errors:
  // lost connection -> retried once on a fresh connection, then kUnavailable; unique
  // violation -> kConflict; anything else -> kInternal. fn may itself return an Error, and the
  // transaction is then rolled back.
  template <typename T>
  Result<T> transact(const std::function<Result<T>(pqxx::work&)>& fn);

  const std::string& url() const { return url_; }

 private:
  std::unique_ptr<pqxx::connection> acquire(Error* error);
  void release(std::unique_ptr<pqxx::connection> conn);

  std::string url_;
  int size_;
  int open_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<pqxx::connection>> idle_;
};

Error translatePqxxError(const std::exception& e);
bool isConnectionError(const std::exception& e);

template <typename T>
Result<T> PgPool::transact(const std::function<Result<T>(pqxx::work&)>& fn) {
  for (int attempt = 0;; ++attempt) {
    Error acquire_error;
    auto conn = acquire(&acquire_error);
    if (!conn) return acquire_error;
    try {
      pqxx::work txn(*conn);
      Result<T> result = fn(txn);
      if (result.ok()) txn.commit();
      else txn.abort();
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
