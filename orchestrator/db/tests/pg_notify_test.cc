// LISTEN/NOTIFY between replicas on a real PostgreSQL: work published by one notifier reaches
// another and not itself; a revoked token is announced by the database's trigger.

#include "orchestrator/db/pg_notify.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "orchestrator/db/pg_store.h"
#include "tests/support/test_db.h"

namespace kiln::db {
namespace {

using namespace std::chrono_literals;

// What one notifier heard.
struct Heard {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::pair<std::string, std::string>> items;
  void add(const std::string& channel, const std::string& payload) {
    {
      std::lock_guard lock(mu);
      items.emplace_back(channel, payload);
    }
    cv.notify_all();
  }
  bool waitFor(const std::pair<std::string, std::string>& item, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, timeout, [&] { return std::find(items.begin(), items.end(), item) != items.end(); });
  }
  std::size_t count(const std::string& channel) {
    std::lock_guard lock(mu);
    return std::count_if(items.begin(), items.end(), [&](const auto& i) { return i.first == channel; });
  }
};

TEST(PgNotifierTest, WorkPublishedByOneReplicaReachesTheOthersButNotItself) {
  testing::TestDatabase db;
  Heard heard_a, heard_b;
  PgNotifier a(db.url(), [&](const std::string& c, const std::string& p) { heard_a.add(c, p); }, nullptr, nullLogger());
  PgNotifier b(db.url(), [&](const std::string& c, const std::string& p) { heard_b.add(c, p); }, nullptr, nullLogger());
  a.start();
  b.start();
  a.publishWork("prn-b01-p0001-h01");
  a.publishWork("prn-b01-p0001-h02");
  EXPECT_TRUE(heard_b.waitFor({"kiln_work", "prn-b01-p0001-h01"}, 5s));
  EXPECT_TRUE(heard_b.waitFor({"kiln_work", "prn-b01-p0001-h02"}, 5s));
  b.publishWork("prn-b01-p0001-h03");
  EXPECT_TRUE(heard_a.waitFor({"kiln_work", "prn-b01-p0001-h03"}, 5s));
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(heard_a.count("kiln_work"), 1u);  // its own two came back to it and were dropped
  EXPECT_EQ(heard_b.count("kiln_work"), 2u);
}

TEST(PgNotifierTest, ManyHostsTravelInPayloadsUnderPostgresLimit) {
  testing::TestDatabase db;
  Heard heard;
  PgNotifier a(db.url(), [](const std::string&, const std::string&) {}, nullptr, nullLogger());
  PgNotifier b(db.url(), [&](const std::string& c, const std::string& p) { heard.add(c, p); }, nullptr, nullLogger());
  a.start();
  b.start();
  for (int i = 0; i < 3000; ++i) a.publishWork("host-" + std::to_string(i));  // ~27 KB: several payloads
  EXPECT_TRUE(heard.waitFor({"kiln_work", "host-2999"}, 10s));
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(heard.count("kiln_work"), 3000u);
}

TEST(PgNotifierTest, TheDatabaseAnnouncesARevokedToken) {
  testing::TestDatabase db;
  auto store = makePgStore({db.url(), 2});
  const core::Actor admin{"t-admin", "admin"};
  auto t = store->createToken(core::Role::kViewer, "ci", "", admin);
  ASSERT_TRUE(t.ok()) << t.error();
  Heard heard;
  PgNotifier n(db.url(), [&](const std::string& c, const std::string& p) { heard.add(c, p); }, nullptr, nullLogger());
  n.start();
  ASSERT_TRUE(store->revokeToken(t->info.id, admin).ok());
  EXPECT_TRUE(heard.waitFor({"kiln_tokens", t->info.id}, 5s));
}

}  // namespace
}  // namespace kiln::db
