#include "tests/support/test_db.h"

#include <cstdio>
#include <cstdlib>
#include <pqxx/pqxx>

#include "common/crypto.h"
#include "orchestrator/db/migrations.h"

namespace kiln::testing {

std::string testServer() {
  const char* s = std::getenv("KILN_TEST_PG");
  if (!s || !*s) {
    std::fprintf(stderr,
                 "KILN_TEST_PG is not set: run the tests through deploy/test.sh, which starts a "
                 "throwaway PostgreSQL\n");
    std::abort();
  }
  return s;
}

TestDatabase::TestDatabase() : server_(testServer()), name_("kiln_test_" + randomHex(6)) {
  {
    pqxx::connection admin(server_ + " dbname=postgres");
    pqxx::nontransaction tx(admin);
    tx.exec0("CREATE DATABASE " + name_);  // name_ is ours, not input
  }
  url_ = server_ + " dbname=" + name_;
  auto report = db::applyMigrations(url_);
  if (!report.ok()) {
    std::fprintf(stderr, "migrations failed: %s\n", report.error().message.c_str());
    std::abort();
  }
}

TestDatabase::~TestDatabase() {
  try {
    pqxx::connection admin(server_ + " dbname=postgres");
    pqxx::nontransaction tx(admin);
    tx.exec0("DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "could not drop %s: %s\n", name_.c_str(), e.what());
  }
}

void TestDatabase::setReachable(bool reachable) const {
  pqxx::connection admin(server_ + " dbname=postgres");
  pqxx::nontransaction tx(admin);
  tx.exec0("ALTER DATABASE " + name_ + " ALLOW_CONNECTIONS " + (reachable ? "true" : "false"));
  if (!reachable) tx.exec("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = " + tx.quote(name_));
}

std::string TestDatabase::query(const std::string& sql) const {
  pqxx::connection c(url_);
  pqxx::nontransaction tx(c);
  auto r = tx.exec(sql);
  if (r.empty() || r[0].empty() || r[0][0].is_null()) return "";
  return r[0][0].as<std::string>();
}

}  // namespace kiln::testing
