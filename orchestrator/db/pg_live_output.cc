#include "orchestrator/db/pg_live_output.h"

#include <mutex>

#include "orchestrator/db/pg_internal.h"
#include "orchestrator/db/pg_pool.h"

namespace kiln::db {
namespace {

using runs::LiveChunk;
using runs::LiveOutput;
using runs::LiveStream;

constexpr const char* kLiveAssignment =
    "SELECT coalesce('runner:' || runner, host_id), state, lease, run_id, step_id, attempt FROM assignments WHERE id = $1";
constexpr const char* kLiveCreate =
    "INSERT INTO step_live_output (assignment_id) VALUES ($1) ON CONFLICT (assignment_id) DO NOTHING";
constexpr const char* kLiveLock =
    "SELECT stdout, stdout_start, stdout_end, stderr, stderr_start, stderr_end FROM step_live_output"
    " WHERE assignment_id = $1 FOR UPDATE";
constexpr const char* kLiveWrite =
    "UPDATE step_live_output SET stdout = $2, stdout_start = $3, stdout_end = $4, stderr = $5, stderr_start = $6,"
    " stderr_end = $7, updated_at = now() WHERE assignment_id = $1";
constexpr const char* kLiveRead =
    "SELECT a.host_id, a.state, a.run_id, a.step_id, a.attempt, o.stdout, o.stdout_start, o.stdout_end, o.stderr,"
    " o.stderr_start, o.stderr_end, extract(epoch from o.updated_at)::float8"
    " FROM assignments a LEFT JOIN step_live_output o ON o.assignment_id = a.id WHERE a.id = $1";
// Output of steps that are over and quiet for a while; a long step that prints nothing keeps its
// row (it is still dispatched).
constexpr const char* kLiveSweep =
    "DELETE FROM step_live_output o WHERE o.updated_at < now() - make_interval(secs => $1)"
    " AND NOT EXISTS (SELECT 1 FROM assignments a WHERE a.id = o.assignment_id AND a.state = 'dispatched')";

LiveStream streamFrom(const pqxx::row& r, int at) {
  LiveStream s;
  if (r[at].is_null()) return s;
  s.text = r[at].as<std::string>();
  s.start = r[at + 1].as<std::int64_t>();
  s.end = r[at + 2].as<std::int64_t>();
  return s;
}

class PgLiveOutputStore final : public runs::LiveOutputStore {
 public:
  PgLiveOutputStore(const PgStoreOptions& o, PgLiveOutputOptions live)
      : pool_(o.database_url, o.pool_size,
              {{"live_assignment", kLiveAssignment},
               {"live_create", kLiveCreate},
               {"live_lock", kLiveLock},
               {"live_write", kLiveWrite},
               {"live_read", kLiveRead}}),
        live_(live) {}

  Result<runs::LiveEnds> append(const std::string& assignment_id, const std::string& host, int lease,
                                const std::optional<LiveChunk>& out, const std::optional<LiveChunk>& err) override {
    auto ends = pool_.transact<runs::LiveEnds>([&](pqxx::work& txn) -> Result<runs::LiveEnds> {
      // Only live output: nothing here is worth waiting for a WAL flush (the table is unlogged).
      txn.exec0("SET LOCAL synchronous_commit = off");
      auto a = txn.exec_prepared("live_assignment", assignment_id);
      if (a.empty()) return notFound("no assignment '" + assignment_id + "'");
      if (a[0][0].as<std::string>() != host)
        return Error(ErrorCode::kPermissionDenied, "assignment " + assignment_id + " is not for host " + host);
      if (a[0][1].as<std::string>() != "dispatched" || a[0][2].as<int>() != lease)
        return conflict("the lease of assignment " + assignment_id +
                        " is stale or the step is over: stop sending its output");
      txn.exec_prepared("live_create", assignment_id);
      auto row = txn.exec_prepared1("live_lock", assignment_id);
      LiveStream o = streamFrom(row, 0), e = streamFrom(row, 3);
      if (out) runs::appendLive(o, *out);
      if (err) runs::appendLive(e, *err);
      txn.exec_prepared("live_write", assignment_id, o.text, o.start, o.end, e.text, e.start, e.end);
      return runs::LiveEnds{o.end, e.end};
    });
    if (ends.ok()) maybeSweep();
    return ends;
  }

  Result<LiveOutput> read(const std::string& assignment_id) override {
    return pool_.read<LiveOutput>([&](pqxx::nontransaction& txn) -> Result<LiveOutput> {
      auto rows = txn.exec_prepared("live_read", assignment_id);
      if (rows.empty()) return notFound("no assignment '" + assignment_id + "'");
      const auto& r = rows[0];
      LiveOutput o;
      o.assignment_id = assignment_id;
      o.host = r[0].as<std::string>();
      o.state = r[1].as<std::string>();
      o.run_id = r[2].as<std::string>();
      o.step_id = r[3].as<std::string>();
      o.attempt = r[4].as<int>();
      o.out = streamFrom(r, 5);
      o.err = streamFrom(r, 8);
      o.updated_at = optEpoch(r[11]);
      return o;
    });
  }

 private:
  void maybeSweep() {
    {
      std::lock_guard lock(mu_);
      const auto now = std::chrono::steady_clock::now();
      if (now < next_sweep_) return;
      next_sweep_ = now + live_.sweep_interval;
    }
    (void)pool_.transact<Ok>([&](pqxx::work& txn) -> Status {
      txn.exec_params0(kLiveSweep, static_cast<double>(live_.keep_after_done.count()));
      return Ok{};
    });
  }

  PgPool pool_;
  PgLiveOutputOptions live_;
  std::mutex mu_;
  std::chrono::steady_clock::time_point next_sweep_{};
};

}  // namespace

std::unique_ptr<runs::LiveOutputStore> makePgLiveOutputStore(const PgStoreOptions& options, PgLiveOutputOptions live) {
  return std::make_unique<PgLiveOutputStore>(options, live);
}

}  // namespace kiln::db
