#pragma once
// The reliability ledger as a service: interruptions in, reports out. Storage is behind
// ReliabilityStore (orchestrator/db/pg_reliability_store.cc); the maths is reliability.h.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "orchestrator/core/store.h"
#include "orchestrator/reliability/reliability.h"

namespace kiln::reliability {

struct Interruption {
  std::string id;
  TimePoint at;
  std::string job;
  std::optional<int> job_gpus;
  std::vector<std::string> hosts;
  std::string pod;
  std::string cause;
  std::string owner, description;
  bool candidate = false;
};

// POST /api/v1/interruptions as an Interruption: {id, at, cause, hosts | pod, job?, job_gpus?,
// owner?, description?}. Every bad field in one kInvalidContent. Pure (the REST codec).
Result<Interruption> decodeInterruption(const nlohmann::json& body);

struct Scope {
  std::string site, building, platform;
};

// What a report needs for [from, to) in a scope.
struct LedgerData {
  // Hosts in service, as serviceSeriesFromRollup takes them for rollupWindow(from, to): the
  // level at its first day, the rolled-up days and hours, the raw deltas (hosts entering (+) /
  // leaving (-) service) of the partial hours.
  std::int64_t service_level_at_first_day = 0;
  std::vector<ServicePeriod> service_days, service_hours;
  std::vector<std::pair<TimePoint, int>> service_raw_deltas;
  // Interruptions counted by week (weekStart), cause and candidate flag.
  struct Count {
    TimePoint week;
    std::string cause;
    bool candidate;
    std::int64_t n;
  };
  std::vector<Count> interruptions;
  struct Lemon {
    std::string host, pod, state;
    int interruptions = 0, repairs = 0;
  };
  std::vector<Lemon> lemons;
  // When the first host in scope entered service (the fleet's history starts there); none when
  // no host in scope ever has. Independent of the window.
  std::optional<TimePoint> history_start;
};

class ReliabilityStore {
 public:
  virtual ~ReliabilityStore() = default;
  // kAccepted: created (true) or the same interruption already recorded (false); kConflict when
  // the id exists with other content; kInvalidContent for unknown hosts or pod.
  virtual Result<bool> record(const Interruption& i, const core::Actor& actor) = 0;
  // Interruptions in [from, to), newest first (at DESC, id), keyset-paginated; next_cursor is
  // none on the last page. Hosts sorted by id. kInvalidArgument for a bad cursor.
  virtual Result<core::Page<Interruption>> list(TimePoint from, TimePoint to, const std::string& cause,
                                                std::optional<bool> candidate, const core::PageRequest& page) = 0;
  virtual Result<LedgerData> data(TimePoint from, TimePoint to, const Scope& scope, int lemon_threshold) = 0;
  virtual Result<std::map<std::string, std::int64_t>> countsByCause() = 0;
};

// The targets the report and the metrics compare against (kilnd's reliability_target setting).
struct ReliabilityTargets {
  double per_8k_gpus_per_day = kNorthStarPer8kPerDay;  // interruptions per 8,000 GPUs per day
  // The same target as a mean time between interruptions: 8,000 x 24 / rate GPU-hours.
  double mtbiGpuHours() const { return kGpusPerRateUnit * 24 / per_8k_gpus_per_day; }
};

// POST /interruptions: the interruption as decoded, and whether this call recorded it (false: a
// retry of one already recorded with the same content).
struct RecordOutcome {
  Interruption interruption;
  bool created = false;
};

// GET /reliability: the confirmed interruptions of [from, to) in a scope against its GPU-hours in
// service, in total, by cause and by week, and the lemon hosts. Candidates are only counted.
struct ReliabilityReport {
  TimePoint from, to;
  double days = 0;  // Window{from, to}.days()
  Scope scope;
  Rates total;  // confirmed interruptions only
  std::int64_t candidates = 0;
  // When the scope's history starts (none: no host in it ever entered service) and how many
  // days of the window it covers: a 28-day rate over 3 hours of history is a 3-hour rate.
  std::optional<TimePoint> history_start;
  double covered_days = 0;
  ReliabilityTargets targets;
  struct Cause {
    std::string cause;
    std::int64_t count = 0;
    double share = 0;  // of the confirmed interruptions
  };
  std::vector<Cause> causes;  // the most first; only causes with interruptions
  struct Week {
    TimePoint start;  // weekStart
    Rates rates;
  };
  std::vector<Week> weekly;  // oldest first, every week the window touches
  int lemon_threshold = 0;
  std::vector<LedgerData::Lemon> lemons;  // the worst first (the store's order)
};

class ReliabilityService {
 public:
  ReliabilityService(ReliabilityStore& store, core::Clock& clock, ReliabilityTargets targets = {})
      : store_(store), clock_(clock), targets_(targets) {}
  // Validates a POST /interruptions body (decodeInterruption) and records it.
  Result<RecordOutcome> record(const nlohmann::json& body, const core::Actor& actor);
  // `from` and `to` ISO 8601 UTC, empty for the last 28 days (or the 28 days before `to`); the
  // window at most 3 years. kInvalidArgument for a bad window.
  Result<ReliabilityReport> report(const std::string& from, const std::string& to, const Scope& scope,
                                   int lemon_threshold);
  // The window as report() takes it; `cause` one of causes() or empty, `candidate` "true",
  // "false" or empty for both.
  Result<core::Page<Interruption>> list(const std::string& from, const std::string& to, const std::string& cause,
                                        const std::string& candidate, const core::PageRequest& page);
  std::string metrics();

 private:
  Result<std::pair<TimePoint, TimePoint>> window(const std::string& from, const std::string& to);
  ReliabilityStore& store_;
  core::Clock& clock_;
  ReliabilityTargets targets_;
};

// ISO 8601 UTC ("2026-12-02T10:00:00Z", "2026-12-02") to a time point.
std::optional<TimePoint> parseTime(const std::string& text);
std::string formatTime(TimePoint t);

}  // namespace kiln::reliability
