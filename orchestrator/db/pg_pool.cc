#include "orchestrator/db/pg_pool.h"

#include <chrono>

namespace kiln::db {

PgPool::PgPool(std::string url, int size, std::vector<PreparedStatement> prepared)
    : url_(std::move(url)), size_(size), prepared_(std::move(prepared)) {}
PgPool::~PgPool() = default;

std::unique_ptr<pqxx::connection> PgPool::acquire(Error* error) {
  std::unique_lock lock(mu_);
  if (!cv_.wait_for(lock, std::chrono::seconds(10),
                    [&] { return !idle_.empty() || open_ < size_; })) {
    *error = unavailable("no database connection free within 10 s");
    return nullptr;
  }
  if (!idle_.empty()) {
    auto conn = std::move(idle_.back());
    idle_.pop_back();
    return conn;
  }
  ++open_;
  lock.unlock();
  try {
    auto conn = std::make_unique<pqxx::connection>(url_);
    // Registered only: libpqxx prepares each on the server at its first use.
    for (const auto& p : prepared_) conn->prepare(p.name, p.sql);
    return conn;
  } catch (const std::exception& e) {
    std::lock_guard relock(mu_);
    --open_;
    cv_.notify_one();
    *error = unavailable(std::string("cannot connect to the database: ") + e.what());
    return nullptr;
  }
}

void PgPool::release(std::unique_ptr<pqxx::connection> conn) {
  std::lock_guard lock(mu_);
  idle_.push_back(std::move(conn));
  cv_.notify_one();
}

bool isConnectionError(const std::exception& e) {
  return dynamic_cast<const pqxx::broken_connection*>(&e) != nullptr ||
         dynamic_cast<const pqxx::in_doubt_error*>(&e) != nullptr;
}

Error translatePqxxError(const std::exception& e) {
  if (isConnectionError(e)) return unavailable(std::string("database connection lost: ") + e.what());
  if (auto* sql = dynamic_cast<const pqxx::sql_error*>(&e)) {
    const std::string state = sql->sqlstate();
    if (state == "23505") return conflict("already exists");
    if (state == "23503") return conflict("refers to something that does not exist");
    if (state == "40001" || state == "40P01") return unavailable("database conflict, retry");
    if (state == "57014") return {ErrorCode::kTimeout, "database statement timed out"};
  }
  return internalError(std::string("database error: ") + e.what());
}

}  // namespace kiln::db
