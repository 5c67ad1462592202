// kilnd as a process: start/stop/restart through KilndProcess, SIGTERM with a request in
// flight, two replicas on one database.

#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <future>
#include <thread>

#include "orchestrator/core/fleet_generator.h"
#include "tests/api/api_fixture.h"

namespace kiln::apitest {
namespace {

using testing::KilndOptions;
using testing::KilndProcess;
using testing::TestDatabase;

std::unique_ptr<http::Client> clientOf(const KilndProcess& k, const std::string& token) {
  return std::make_unique<http::Client>(http::ClientOptions{.base_url = k.url(), .token = token});
}

TEST(KilndProcessTest, StartsStopsAndRestartsOnTheSamePortWithTheSameData) {
  TestDatabase db;
  KilndProcess kilnd({.database_url = db.url()});
  auto started = kilnd.start();
  ASSERT_TRUE(started.ok()) << started.error().message;
  EXPECT_GT(kilnd.pid(), 0);
  EXPECT_GT(kilnd.port(), 0);
  EXPECT_TRUE(kilnd.running());
  ASSERT_EQ(kilnd.adminToken().rfind("kiln_", 0), 0u) << kilnd.adminToken();
  const int port = kilnd.port();
  const pid_t first_pid = kilnd.pid();

  auto admin = clientOf(kilnd, kilnd.adminToken());
  ASSERT_EQ(call(*admin, "POST", "/api/v1/fleet/import", smallFleet(1).dump()).status, 201);
  // kilnd writes the request's log line after it sent the answer: allow it a moment.
  bool logged = false;
  for (int i = 0; i < 100 && !logged; ++i) {
    logged = kilnd.logTail(50).find("POST /api/v1/fleet/import 201") != std::string::npos;
    if (!logged) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(logged) << kilnd.logTail(50);

  auto restarted = kilnd.restart();
  ASSERT_TRUE(restarted.ok()) << restarted.error().message;
  EXPECT_EQ(kilnd.port(), port);
  EXPECT_NE(kilnd.pid(), first_pid);
  EXPECT_EQ(call(*admin, "GET", "/api/v1/pods/t01-b01-p0001").status, 200);  // same token, same data

  EXPECT_EQ(kilnd.stop(), 0);
  EXPECT_FALSE(kilnd.running());
  auto gone = admin->request("GET", "/healthz");
  EXPECT_FALSE(gone.ok());
}

TEST(KilndProcessTest, KillReportsTheSignal) {
  TestDatabase db;
  KilndProcess kilnd({.database_url = db.url()});
  ASSERT_TRUE(kilnd.start().ok());
  EXPECT_EQ(kilnd.kill(), 128 + SIGKILL);
  EXPECT_FALSE(kilnd.running());
  ASSERT_TRUE(kilnd.start().ok());  // and it starts again after a crash
  EXPECT_EQ(kilnd.stop(), 0);
}

TEST(KilndProcessTest, PassesExtraArgumentsAndEnvironment) {
  TestDatabase db;
  KilndProcess kilnd({.database_url = db.url(),
                      .extra_args = {"--threads", "2"},
                      .extra_env = {{"KILN_DB_POOL", "3"}},
                      .log_level = "debug"});
  auto started = kilnd.start();
  ASSERT_TRUE(started.ok()) << started.error().message;
  auto c = clientOf(kilnd, "");
  EXPECT_EQ(call(*c, "GET", "/healthz").status, 200);

  // kilnd refuses a bad flag and a bad environment variable (exit code 2): both reached it.
  KilndProcess bad_flag({.database_url = db.url(), .extra_args = {"--no-such-flag"}});
  auto refused = bad_flag.start();
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("exited with status 2"), std::string::npos) << refused.error().message;
  EXPECT_NE(refused.error().message.find("no-such-flag"), std::string::npos) << refused.error().message;

  KilndProcess bad_env({.database_url = db.url(), .extra_env = {{"KILN_DB_POOL", "lots"}}});
  refused = bad_env.start();
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("KILN_DB_POOL"), std::string::npos) << refused.error().message;
}

TEST(KilndProcessTest, ReportsABinaryThatCannotRun) {
  TestDatabase db;
  KilndProcess kilnd({.database_url = db.url(), .binary = "/nonexistent/kilnd"});
  auto r = kilnd.start();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("cannot execute /nonexistent/kilnd"), std::string::npos) << r.error().message;
}

TEST(KilndProcessTest, ReportsADatabaseItCannotReach) {
  KilndProcess kilnd({.database_url = testing::testServer() + " dbname=kiln_no_such_database_here",
                      .start_timeout = std::chrono::milliseconds(20000)});
  auto r = kilnd.start();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("exited with status 1"), std::string::npos) << r.error().message;
}

TEST(KilndShutdownTest, SigtermWithARequestInFlightExitsZeroPromptly) {
  TestDatabase db;
  KilndProcess kilnd({.database_url = db.url()});
  ASSERT_TRUE(kilnd.start().ok());
  core::FleetGenRequest gen;
  gen.gpus = 200 * 72;
  const std::string fleet = core::generateFleet(gen).dump();

  auto in_flight = std::async(std::launch::async, [&] {
    auto c = clientOf(kilnd, kilnd.adminToken());
    return c->request("POST", "/api/v1/fleet/import", fleet);
  });
  // The import holds a table lock on pods for its whole transaction: once it is there the
  // request is being served.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  bool seen = false;
  while (!seen && std::chrono::steady_clock::now() < give_up) {
    seen = db.query("SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation"
                    " WHERE c.relname = 'pods' AND l.mode = 'ShareRowExclusiveLock'") != "0";
    if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(seen) << "the import never started";

  const auto t0 = std::chrono::steady_clock::now();
  kilnd.signal(SIGTERM);
  const auto status = kilnd.waitExit(std::chrono::seconds(20));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(status.has_value()) << "kilnd still running 20 s after SIGTERM";
  EXPECT_EQ(*status, 0) << kilnd.logTail(30);
  EXPECT_LT(secs, 10.0) << "kilnd drains for at most 5 s";

  // The request in flight was finished, not dropped: its answer arrived and its rows committed.
  auto r = in_flight.get();
  ASSERT_TRUE(r.ok()) << r.error().message << "\n" << kilnd.logTail(30);
  EXPECT_EQ(r->status, 201) << r->body;
  EXPECT_EQ(db.query("SELECT count(*) FROM pods"), "200");
  std::printf("kilnd exited %.2f s after SIGTERM with an import in flight\n", secs);
}

TEST(KilndShutdownTest, SigtermWhenIdleExitsZero) {
  TestDatabase db;
  KilndProcess kilnd({.database_url = db.url()});
  ASSERT_TRUE(kilnd.start().ok());
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(kilnd.stop(), 0);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 3.0);
}

// Two kilnd replicas on one database: a starts first (and holds the controller lock), b shares
// a's admin token file.
class KilndReplicasTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto started = a.start();
    ASSERT_TRUE(started.ok()) << started.error().message;
    started = b.start();
    ASSERT_TRUE(started.ok()) << started.error().message;
  }
  TestDatabase db;
  KilndProcess a{{.database_url = db.url()}};
  KilndProcess b{{.database_url = db.url(), .admin_token_file = a.adminTokenFile()}};
};

TEST_F(KilndReplicasTest, TwoKilndsServeOneDatabaseAtOnce) {
  EXPECT_NE(a.port(), b.port());
  EXPECT_EQ(a.adminToken(), b.adminToken());
  EXPECT_EQ(db.query("SELECT count(*) FROM tokens WHERE role = 'admin'"), "1");

  auto ca = clientOf(a, a.adminToken());
  auto cb = clientOf(b, b.adminToken());
  // Written through one, read through the other.
  ASSERT_EQ(call(*ca, "POST", "/api/v1/fleet/import", smallFleet(2).dump()).status, 201);
  EXPECT_EQ(call(*cb, "POST", "/api/v1/fleet/import", smallFleet(2).dump()).status, 200);
  EXPECT_EQ(call(*cb, "GET", "/api/v1/pods").doc()["items"].size(), 2u);
  ASSERT_EQ(call(*cb, "POST", "/api/v1/hosts/t01-b01-p0002-h01/actions", R"({"action":"drain","reason":"b"})").status,
            200);
  EXPECT_EQ(call(*ca, "GET", "/api/v1/hosts/t01-b01-p0002-h01").doc()["state"], "draining");
  // The same transition through the other replica is now a conflict, not a second event.
  EXPECT_TRUE(isError(call(*ca, "POST", "/api/v1/hosts/t01-b01-p0002-h01/actions", R"({"action":"drain","reason":"a"})"),
                      409, "conflict"));
  EXPECT_EQ(db.query("SELECT count(*) FROM host_events WHERE action = 'drain'"), "1");

  // A token made through b works through a.
  Reply made = call(*cb, "POST", "/api/v1/tokens", R"({"role":"viewer","name":"via b"})");
  ASSERT_EQ(made.status, 201);
  auto viewer = clientOf(a, made.doc()["token"].get<std::string>());
  EXPECT_EQ(call(*viewer, "GET", "/api/v1/pods").status, 200);

  // Concurrent writes through both replicas: every one lands exactly once.
  auto drainAll = [&](http::Client& c, int first) {
    for (int h = first; h <= 18; h += 2) {
      char path[96];
      std::snprintf(path, sizeof path, "/api/v1/hosts/t01-b01-p0001-h%02d/actions", h);
      EXPECT_EQ(call(c, "POST", path, R"({"action":"allocate","reason":"job"})").status, 200) << path;
    }
  };
  std::thread ta([&] { drainAll(*ca, 1); });
  std::thread tb([&] { drainAll(*cb, 2); });
  ta.join();
  tb.join();
  EXPECT_EQ(db.query("SELECT count(*) FROM hosts WHERE pod_id = 't01-b01-p0001' AND state = 'allocated'"), "18");

  // One replica goes away; the other keeps serving.
  EXPECT_EQ(a.stop(), 0);
  EXPECT_EQ(call(*cb, "GET", "/api/v1/pods/t01-b01-p0001").status, 200);
  EXPECT_EQ(b.stop(), 0);
}

TEST_F(KilndReplicasTest, ATokenRevokedThroughOneReplicaStopsWorkingOnTheOtherWithinASecond) {
  auto ca = clientOf(a, a.adminToken());
  Reply made = call(*ca, "POST", "/api/v1/tokens", R"({"role":"viewer","name":"ci"})");
  ASSERT_EQ(made.status, 201) << made.body;
  auto on_b = clientOf(b, made.doc()["token"].get<std::string>());
  ASSERT_EQ(call(*on_b, "GET", "/api/v1/pods").status, 200);  // now in b's token cache (for 10 min)

  ASSERT_EQ(call(*ca, "DELETE", "/api/v1/tokens/" + made.doc()["id"].get<std::string>()).status, 200);
  // b learns of it from the database's notification, not from its cache's TTL.
  const auto t0 = std::chrono::steady_clock::now();
  int status = 200;
  while (status == 200 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10)) {
    status = call(*on_b, "GET", "/api/v1/pods").status;
    if (status == 200) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(status, 401);
  // The database announces the revocation (LISTEN kiln_tokens): within a second, not at the
  // cache's 10 minutes nor only at the once-a-second feed.
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.0);
  EXPECT_EQ(a.stop(), 0);
  EXPECT_EQ(b.stop(), 0);
}

TEST_F(KilndReplicasTest, AStepQueuedThroughOneReplicaWakesAPollParkedOnTheOtherWithinASecond) {
  auto ca = clientOf(a, a.adminToken());
  ASSERT_EQ(call(*ca, "POST", "/api/v1/fleet/import", smallFleet(1).dump()).status, 201);
  const std::string one_step = "name: one-step\nversion: \"1\"\nscope: host\nsteps:\n  - id: only\n"
                               "    run: [nvidia-smi, -q, -x]\n    timeout: 10m\n";
  Reply put = call(*ca, "PUT", "/api/v1/workflows/one-step", one_step, "application/yaml");
  ASSERT_TRUE(put.status == 200 || put.status == 201) << put.body;
  Reply enroll = call(*ca, "POST", "/api/v1/tokens", R"({"role":"enroll","name":"e"})");
  ASSERT_EQ(enroll.status, 201) << enroll.body;
  const std::string host = "t01-b01-p0001-h01";
  auto enroller = clientOf(b, enroll.doc()["token"].get<std::string>());
  Reply reg = call(*enroller, "POST", "/api/v1/agents/register",
                   json{{"host", host}, {"boot_id", "boot-1"}, {"agent_version", "test"}}.dump());
  ASSERT_EQ(reg.status, 200) << reg.body;
  auto agent = clientOf(b, reg.doc()["token"].get<std::string>());

  // The agent's long poll parks on b; the run is started through a, which queues its step.
  // Without a notification b would find it only at its next refresh of hosts with work (5 s).
  std::vector<double> waits;
  for (int i = 0; i < 10; ++i) {
    auto answered = std::async(std::launch::async, [&] {
      for (;;) {
        Reply r = call(*agent, "GET", "/api/v1/agents/" + host + "/work?wait=20&boot_id=boot-1");
        if (r.status == 200 && r.doc().contains("assignment"))
          return std::make_pair(std::chrono::steady_clock::now(), r.doc()["assignment"]);
        if (r.status != 204) return std::make_pair(std::chrono::steady_clock::now(), json());
      }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // parked by now
    const auto t0 = std::chrono::steady_clock::now();
    Reply run = call(*ca, "POST", "/api/v1/workflow-runs", json{{"workflow", "one-step"}, {"hosts", {host}}}.dump());
    ASSERT_EQ(run.status, 201) << run.body;
    ASSERT_EQ(answered.wait_for(std::chrono::seconds(30)), std::future_status::ready);
    auto [at, assignment] = answered.get();
    ASSERT_TRUE(assignment.is_object()) << "the poll ended without the step";
    waits.push_back(std::chrono::duration<double>(at - t0).count());
    json body = {{"lease", assignment["lease"]}, {"host", host}, {"started", true}, {"exit_code", 0},
                 {"signal", 0}, {"timed_out", false}, {"cancelled", false}, {"duration_ms", 5},
                 {"stdout_tail", ""}, {"stderr_tail", ""}, {"boot_id", "boot-1"}};
    Reply done = call(*agent, "POST", "/api/v1/assignments/" + assignment["id"].get<std::string>() + "/result", body.dump());
    ASSERT_EQ(done.status, 200) << done.body;
  }
  std::sort(waits.begin(), waits.end());
  std::printf("queue (replica a) -> parked poll answered (replica b), 10 steps: p50 %.1f ms, max %.1f ms\n",
              waits[waits.size() / 2] * 1000, waits.back() * 1000);
  EXPECT_LT(waits.back(), 1.0);
  EXPECT_EQ(a.stop(), 0);
  EXPECT_EQ(b.stop(), 0);
}

// Issue 14: PostgreSQL gone for 30 s. Every call answers at once (503 and the error body, never
// a hang), /healthz says why, and kilnd comes back by itself: reads, writes and the controller.
TEST(KilndDatabaseOutageTest, ADatabaseGoneFor30SecondsIs503WithTheReasonAndKilndResumesUnattended) {
  TestDatabase db;
  KilndProcess k({.database_url = db.url()});
  ASSERT_TRUE(k.start().ok());
  auto admin = clientOf(k, k.adminToken());
  auto anonymous = clientOf(k, "");
  ASSERT_EQ(call(*admin, "POST", "/api/v1/fleet/import", smallFleet(1).dump()).status, 201);
  ASSERT_EQ(call(*admin, "GET", "/api/v1/pods").status, 200);

  db.setReachable(false);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  double slowest = 0;
  int answered = 0;
  std::string why;
  while (std::chrono::steady_clock::now() < until) {
    const auto t0 = std::chrono::steady_clock::now();
    Reply pods = call(*admin, "GET", "/api/v1/pods");
    Reply health = call(*anonymous, "GET", "/healthz");
    slowest = std::max(slowest, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    EXPECT_EQ(pods.status, 503) << pods.body;
    if (pods.status == 503) {
      EXPECT_EQ(pods.doc()["error"].value("code", ""), "unavailable") << pods.body;
    }
    EXPECT_EQ(health.status, 503) << health.body;
    why = health.doc().value("database", "");
    ++answered;
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  }
  EXPECT_GE(answered, 10);
  EXPECT_LT(slowest, 5.0) << "a call hung while the database was gone";
  EXPECT_FALSE(why.empty());
  std::printf("database gone 30 s: %d rounds answered, slowest %.0f ms; /healthz said: %s\n", answered,
              slowest * 1000, why.c_str());

  db.setReachable(true);
  // Back without a restart: /healthz, reads, a write, and the controller's leader lock.
  const auto back = std::chrono::steady_clock::now();
  ASSERT_TRUE([&] {
    for (int i = 0; i < 300; ++i) {
      if (call(*anonymous, "GET", "/healthz").status == 200) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }()) << "kilnd did not reconnect";
  std::printf("healthy again %.0f ms after the database came back\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - back).count() * 1000);
  bool served = false;
  for (int i = 0; i < 50 && !served; ++i) {
    served = call(*admin, "GET", "/api/v1/pods").status == 200;
    if (!served) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(served);
  EXPECT_EQ(call(*admin, "POST", "/api/v1/hosts/t01-b01-p0001-h01/actions", R"({"action":"drain","reason":"after"})").status,
            200);
  bool leading = false;
  for (int i = 0; i < 100 && !leading; ++i) {
    leading = call(*admin, "GET", "/metrics").body.find("\nkiln_leader 1") != std::string::npos;
    if (!leading) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(leading) << "the controller did not take its lock again";
  EXPECT_EQ(k.stop(), 0);
}

}  // namespace
}  // namespace kiln::apitest
