#pragma once
// A complete runs::LiveOutputStore for tests, in memory: the assignments a test puts (as the run
// store keeps them: host, lease, state) and one live output per assignment, appended and kept as
// the PostgreSQL store does (orchestrator/db/pg_live_output.cc), finished assignments' output
// swept on an append at most every sweep_interval once quiet for keep_after_done.
// orchestrator/db/tests/live_output_contract_test.cc runs both through one suite. Thread-safe.

#include <chrono>
#include <map>
#include <mutex>
#include <string>

#include "orchestrator/core/clock.h"
#include "orchestrator/runs/live_output.h"

namespace kiln::runs::testing {

// As db::PgLiveOutputOptions.
struct FakeLiveOutputOptions {
  std::chrono::seconds keep_after_done{600};
  std::chrono::seconds sweep_interval{300};
};

class FakeLiveOutputStore final : public LiveOutputStore {
 public:
  // What of an assignment the store reads (assignments' columns).
  struct Assignment {
    std::string id, run_id, host, step_id;
    int attempt = 1;
    int lease = 0;
    std::string state = "dispatched";  // pending, dispatched, done, lost, cancelled
  };

  // `clock`: the wall time of updated_at and the monotonic time of the sweep's interval.
  explicit FakeLiveOutputStore(core::Clock& clock, FakeLiveOutputOptions options = {})
      : clock_(clock), options_(options) {}

  // Adds or replaces an assignment (a dispatch, a new lease, the step's end).
  void putAssignment(const Assignment& a) {
    std::lock_guard lock(mu_);
    assignments_[a.id] = a;
  }

  Result<LiveEnds> append(const std::string& assignment_id, const std::string& host, int lease,
                          const std::optional<LiveChunk>& out, const std::optional<LiveChunk>& err) override {
    std::lock_guard lock(mu_);
    auto a = assignments_.find(assignment_id);
    if (a == assignments_.end()) return notFound("no assignment '" + assignment_id + "'");
    if (a->second.host != host)
      return Error(ErrorCode::kPermissionDenied, "assignment " + assignment_id + " is not for host " + host);
    if (a->second.state != "dispatched" || a->second.lease != lease)
      return conflict("the lease of assignment " + assignment_id +
                      " is stale or the step is over: stop sending its output");
    Output& o = outputs_[assignment_id];
    if (out) appendLive(o.out, *out);
    if (err) appendLive(o.err, *err);
    o.updated_at = clock_.now();
    const LiveEnds ends{o.out.end, o.err.end};
    sweep();
    return ends;
  }

  Result<LiveOutput> read(const std::string& assignment_id) override {
    std::lock_guard lock(mu_);
    auto a = assignments_.find(assignment_id);
    if (a == assignments_.end()) return notFound("no assignment '" + assignment_id + "'");
    LiveOutput o;
    o.assignment_id = assignment_id;
    o.run_id = a->second.run_id;
    o.host = a->second.host;
    o.step_id = a->second.step_id;
    o.state = a->second.state;
    o.attempt = a->second.attempt;
    if (auto it = outputs_.find(assignment_id); it != outputs_.end()) {
      o.out = it->second.out;
      o.err = it->second.err;
      o.updated_at = it->second.updated_at;
    }
    return o;
  }

 private:
  struct Output {
    LiveStream out, err;
    core::TimePoint updated_at;
  };

  // The output of assignments that are not dispatched (or gone), unchanged for longer than
  // keep_after_done; at most once per sweep_interval.
  void sweep() {
    const auto now = clock_.monotonic();
    if (now < next_sweep_) return;
    next_sweep_ = now + options_.sweep_interval;
    const core::TimePoint quiet_since = clock_.now() - options_.keep_after_done;
    for (auto it = outputs_.begin(); it != outputs_.end();) {
      auto a = assignments_.find(it->first);
      const bool running = a != assignments_.end() && a->second.state == "dispatched";
      if (!running && it->second.updated_at < quiet_since)
        it = outputs_.erase(it);
      else
        ++it;
    }
  }

  core::Clock& clock_;
  const FakeLiveOutputOptions options_;
  std::mutex mu_;
  std::map<std::string, Assignment> assignments_;
  std::map<std::string, Output> outputs_;
  MonoTime next_sweep_{};
};

}  // namespace kiln::runs::testing
