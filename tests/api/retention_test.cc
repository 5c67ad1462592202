// Issue 33 (bounded on disk): a real kilnd's leader sweeps what its retention rules say is old
// enough, exports the audit records it deletes, and says so in /metrics; a bad rule stops it at
// start with exit code 2.

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/api/api_fixture.h"

namespace kiln::apitest {
namespace {

using testing::KilndProcess;
using testing::TestDatabase;

TEST(KilndRetentionTest, TheLeaderPrunesOldRowsAndExportsTheAuditRecordsItDeletes) {
  TestDatabase db;
  const auto dir = std::filesystem::temp_directory_path() / ("kiln-retention-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  KilndProcess kilnd({.database_url = db.url(),
                      .extra_args = {"--retention", "runs=1h,idempotency_keys=1h,audit=2h", "--retention-interval", "1",
                                     "--audit-export-dir", dir.string()}});
  ASSERT_TRUE(kilnd.start().ok());
  // What kilnd wrote itself at start stays (young); old rows as a long-lived fleet has them.
  const std::string audit_before = db.query("SELECT count(*) FROM audit_log");
  db.query(
      "INSERT INTO audit_log (at, actor, action, target) VALUES (now() - interval '3 hours', 'tok-9', 'rollout.create',"
      " 'ro-old'), (now() - interval '30 minutes', 'tok-9', 'rollout.pause', 'ro-young')");
  db.query(
      "INSERT INTO idempotency_keys (key, scope, fingerprint, object_id, created_by, created_at) VALUES"
      " ('k-old', 'rollout', 'f', 'o', 't', now() - interval '2 hours'), ('k-young', 'rollout', 'f', 'o', 't', now())");

  http::Client c({.base_url = kilnd.url(), .token = kilnd.adminToken()});
  std::string metrics;
  for (int i = 0; i < 150; ++i) {
    metrics = call(c, "GET", "/metrics").body;
    if (metrics.find("kiln_retention_deleted_total{kind=\"audit\"} 1\n") != std::string::npos &&
        metrics.find("kiln_retention_deleted_total{kind=\"idempotency_keys\"} 1\n") != std::string::npos)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(metrics.find("kiln_retention_deleted_total{kind=\"audit\"} 1\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("kiln_retention_errors_total 0\n"), std::string::npos);
  EXPECT_EQ(db.query("SELECT string_agg(key, ',' ORDER BY key) FROM idempotency_keys"), "k-young");
  EXPECT_EQ(db.query("SELECT count(*) FROM audit_log WHERE target = 'ro-old'"), "0");
  EXPECT_EQ(db.query("SELECT count(*) FROM audit_log WHERE target = 'ro-young'"), "1");
  EXPECT_GE(std::stoi(db.query("SELECT count(*) FROM audit_log")), std::stoi(audit_before) + 1);

  // The deleted record is in this month's export, whole.
  std::string exported;
  for (const auto& f : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(f.path());
    std::stringstream text;
    text << in.rdbuf();
    exported += text.str();
  }
  EXPECT_NE(exported.find("\"target\" : \"ro-old\""), std::string::npos) << exported;
  EXPECT_NE(exported.find("\"action\" : \"rollout.create\""), std::string::npos) << exported;
  EXPECT_EQ(exported.find("ro-young"), std::string::npos);
  EXPECT_EQ(kilnd.stop(), 0);
  std::filesystem::remove_all(dir);

  KilndProcess bad({.database_url = db.url(), .extra_args = {"--retention", "runs=1m"}});
  auto refused = bad.start();
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("exited with status 2"), std::string::npos) << refused.error().message;
  EXPECT_NE(refused.error().message.find("at least 1h"), std::string::npos) << refused.error().message;
}

}  // namespace
}  // namespace kiln::apitest
