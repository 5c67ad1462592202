// The connection pool under two threads sharing one connection (tier store: KILN_TEST_PG).

#include "orchestrator/db/pg_pool.h"

#include <atomic>
#include <mutex>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "tests/support/test_db.h"

namespace kiln::db {
namespace {

// A read (a nontransaction) and a transaction taking turns on the pool's only connection: the
// connection goes back to the pool only once its transaction object is gone. Before, a read
// released its connection while its nontransaction still lived, and the other thread's
// transaction on it failed now and then with "Started transaction<READ COMMITTED> while
// nontransaction still active" (a rollout's staging that could not start, in the e2e test
// that kills kilnd).
TEST(PgPoolTest, AReadAndATransactionTakingTurnsOnOneConnectionNeverMeetOnIt) {
  kiln::testing::TestDatabase db;
  PgPool pool(db.url(), 1);
  std::atomic<int> errors{0};
  std::string first_error;
  std::mutex mu;
  auto note = [&](const Error& e) {
    if (errors++ == 0) {
      std::lock_guard lock(mu);
      first_error = e.message;
    }
  };
  constexpr int kRounds = 3000;
  std::thread reader([&] {
    for (int i = 0; i < kRounds; ++i) {
      auto r =
          pool.read<int>([](pqxx::nontransaction& t) -> Result<int> { return t.exec("SELECT 1")[0][0].as<int>(); });
      if (!r.ok()) note(r.error());
    }
  });
  std::thread writer([&] {
    for (int i = 0; i < kRounds; ++i) {
      auto r = pool.transact<int>([](pqxx::work& t) -> Result<int> { return t.exec("SELECT 2")[0][0].as<int>(); });
      if (!r.ok()) note(r.error());
    }
  });
  reader.join();
  writer.join();
  EXPECT_EQ(errors.load(), 0) << first_error;
}

}  // namespace
}  // namespace kiln::db
