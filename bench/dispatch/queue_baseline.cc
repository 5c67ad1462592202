#include "bench/dispatch/queue_baseline.h"

#include <unistd.h>

#include <algorithm>

#include "bench/dispatch/proc_stats.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <chrono>
#include <pqxx/pqxx>
#include <thread>
#include <vector>

namespace kiln::bench {
namespace {

// A partial index keeps the claim from walking the prefix of finished rows (the usual
// SKIP LOCKED queue; without it each claim scans every row finished before it).
std::string createSql(const std::string& t) {
  return "DROP TABLE IF EXISTS " + t + "; CREATE TABLE " + t +
         " (id bigserial PRIMARY KEY, state text NOT NULL DEFAULT 'pending', taken integer NOT NULL DEFAULT 0);"
         " CREATE INDEX " + t + "_pending ON " + t + " (id) WHERE state = 'pending'";
}
std::string claimSql(const std::string& t) {
  return "UPDATE " + t + " SET state = 'taken', taken = taken + 1 WHERE id = (SELECT id FROM " + t +
         " WHERE state = 'pending' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id";
}
std::string finishSql(const std::string& t) { return "UPDATE " + t + " SET state = 'done' WHERE id = $1"; }

}  // namespace

QueueResult runQueueBaseline(const std::string& url, const std::string& table, long items, int workers) {
  {
    pqxx::connection c(url);
    pqxx::work txn(c);
    txn.exec(createSql(table));
    txn.exec("INSERT INTO " + table + " (state) SELECT 'pending' FROM generate_series(1, " + std::to_string(items) + ")");
    txn.commit();
    pqxx::nontransaction(c).exec("VACUUM ANALYZE " + table);
  }

  // Connections are opened before the clock starts, as kilnd's pool is.
  std::vector<std::unique_ptr<pqxx::connection>> conns;
  for (int i = 0; i < workers; ++i) {
    conns.push_back(std::make_unique<pqxx::connection>(url));
    conns.back()->prepare("claim", claimSql(table));
    conns.back()->prepare("finish", finishSql(table));
  }
  std::vector<int> backends;
  for (auto& c : conns) backends.push_back(pqxx::nontransaction(*c).exec("SELECT pg_backend_pid()")[0][0].as<int>());
  auto backendCpu = [&] {
    double s = 0;
    for (int pid : backends) s += std::max(0.0, cpuSeconds(pid));
    return s;
  };
  std::atomic<long> done{0};
  std::atomic<bool> failed{false};
  std::string error;
  std::mutex error_mu;
  const double db0 = backendCpu(), self0 = cpuSeconds(::getpid());
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int i = 0; i < workers; ++i) {
    threads.emplace_back([&, i] {
      try {
        pqxx::connection& c = *conns[static_cast<std::size_t>(i)];
        while (!failed) {
          long id = 0;
          {
            pqxx::work claim(c);
            auto r = claim.exec_prepared("claim");
            claim.commit();
            if (r.empty()) return;
            id = r[0][0].as<long>();
          }
          pqxx::work finish(c);
          finish.exec_prepared("finish", id);
          finish.commit();
          ++done;
        }
      } catch (const std::exception& e) {
        std::lock_guard lock(error_mu);
        error = e.what();
        failed = true;
      }
    });
  }
  for (auto& t : threads) t.join();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double db_cpu = backendCpu() - db0, client_cpu = cpuSeconds(::getpid()) - self0;
  if (failed) throw std::runtime_error("queue baseline: " + error);

  QueueResult r;
  r.items = done;
  r.seconds = secs;
  r.per_second = secs > 0 ? static_cast<double>(done) / secs : 0;
  r.db_cpu_s = db_cpu;
  r.client_cpu_s = client_cpu;
  pqxx::connection c(url);
  pqxx::work txn(c);
  r.claimed_twice = txn.exec("SELECT count(*) FROM " + table + " WHERE taken > 1")[0][0].as<long>();
  txn.exec("DROP TABLE " + table);
  txn.commit();
  return r;
}

}  // namespace kiln::bench
