#include "orchestrator/rollouts/policy.h"

#include <time.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <ctime>
#include <limits>

#include "orchestrator/core/fleet_model.h"

namespace kiln::rollouts {

namespace {

// "repair: 2 hosts in repair, 1 failed; the pod needs 16 of 18 to serve 64 GPUs", when too
// few of the pod's hosts can serve (PodHostFacts).
std::optional<std::string> shortOfHosts(const PodHostFacts& h) {
  if (h.total == 0) return std::nullopt;
  int out = 0;
  for (const auto& [_, n] : h.out) out += n;
  if (h.total - out >= h.needed) return std::nullopt;
  // Repair first: the usual reason, and the word the reason's class is named by; the others
  // in the order of their names.
  std::vector<std::pair<core::HostState, int>> states(h.out.begin(), h.out.end());
  std::sort(states.begin(), states.end(),
            [](const auto& a, const auto& b) { return core::hostStateName(a.first) < core::hostStateName(b.first); });
  std::stable_partition(states.begin(), states.end(), [](const auto& s) { return s.first == core::HostState::kRepair; });
  std::string list;
  for (const auto& [state, n] : states) {
    const std::string name(core::hostStateName(state));
    const std::string what = state == core::HostState::kRepair || state == core::HostState::kQuarantine ? "in " + name
                             : state == core::HostState::kBurnIn                                           ? "in burn-in"
                                                                                                           : name;
    list += (list.empty() ? std::to_string(n) + (n == 1 ? " host " : " hosts ") : ", " + std::to_string(n) + " ") + what;
  }
  return "repair: " + list + "; the pod needs " + std::to_string(h.needed) + " of " + std::to_string(h.total) +
         " to serve " + std::to_string(h.slice_gpus) + " GPUs";
}

constexpr int kDayMinutes = 24 * 60;
constexpr const char* kDayNames[] = {"mon", "tue", "wed", "thu", "fri", "sat", "sun"};

int dayIndex(const std::string& name) {
  std::string lower;
  for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (int d = 0; d < 7; ++d)
    if (lower == kDayNames[d]) return d;
  return -1;
}

// "HH:MM" -> minutes after midnight; "24:00" only where `allow_24`.
std::optional<int> parseClock(const std::string& s, bool allow_24) {
  if (s.size() != 5 || s[2] != ':' || !std::isdigit(static_cast<unsigned char>(s[0])) ||
      !std::isdigit(static_cast<unsigned char>(s[1])) || !std::isdigit(static_cast<unsigned char>(s[3])) ||
      !std::isdigit(static_cast<unsigned char>(s[4])))
    return std::nullopt;
  const int h = (s[0] - '0') * 10 + (s[1] - '0'), m = (s[3] - '0') * 10 + (s[4] - '0');
  if (m > 59 || h > 24 || (h == 24 && (m != 0 || !allow_24))) return std::nullopt;
  return h * 60 + m;
}

// Whole days since the epoch and minutes into that UTC day.
std::pair<std::int64_t, int> utcDay(core::TimePoint t) {
  const auto minutes = std::chrono::floor<std::chrono::minutes>(t.time_since_epoch()).count();
  const std::int64_t day = minutes >= 0 ? minutes / kDayMinutes : (minutes - kDayMinutes + 1) / kDayMinutes;
  return {day, static_cast<int>(minutes - day * kDayMinutes)};
}
int weekday(std::int64_t day) { return static_cast<int>(((day + 3) % 7 + 7) % 7); }  // 1970-01-01: Thursday

bool opensOn(const MaintenanceWindow& w, std::int64_t day) { return (w.days >> weekday(day)) & 1u; }

std::string utcText(core::TimePoint t) {
  const std::time_t tt = core::Clock_::to_time_t(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%a %Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

}  // namespace

std::optional<MaintenanceWindow> parseWindow(const std::string& text, std::string* why) {
  auto fail = [&](const std::string& m) {
    if (why) *why = m;
    return std::nullopt;
  };
  const std::string kForm = "expected \"[DAYS ]HH:MM-HH:MM\" in UTC, e.g. \"mon-fri 22:00-06:00\"";
  MaintenanceWindow w;
  w.text = text;
  std::string times = text;
  if (const auto space = text.find(' '); space != std::string::npos) {
    w.days = 0;
    const std::string days = text.substr(0, space);
    times = text.substr(space + 1);
    std::size_t from = 0;
    while (from <= days.size()) {
      const std::size_t comma = std::min(days.find(',', from), days.size());
      const std::string item = days.substr(from, comma - from);
      const std::size_t dash = item.find('-');
      const int a = dayIndex(item.substr(0, dash));
      const int b = dash == std::string::npos ? a : dayIndex(item.substr(dash + 1));
      if (a < 0 || b < 0) return fail("unknown day '" + item + "': " + kForm + " (days mon..sun)");
      for (int d = a;; d = (d + 1) % 7) {
        w.days |= 1u << d;
        if (d == b) break;
      }
      from = comma + 1;
    }
  }
  const std::size_t dash = times.find('-');
  if (dash == std::string::npos) return fail(kForm);
  const auto start = parseClock(times.substr(0, dash), false);
  const auto end = parseClock(times.substr(dash + 1), true);
  if (!start || !end) return fail(kForm);
  if (*start == *end) return fail("the window opens and closes at " + times.substr(0, dash) + ": " + kForm);
  w.start_min = *start;
  w.end_min = *end;
  return w;
}

bool windowOpen(const std::vector<MaintenanceWindow>& windows, core::TimePoint t) {
  if (windows.empty()) return true;
  const auto [day, minute] = utcDay(t);
  for (const auto& w : windows) {
    if (w.start_min < w.end_min) {
      if (opensOn(w, day) && minute >= w.start_min && minute < w.end_min) return true;
    } else if ((opensOn(w, day) && minute >= w.start_min) || (opensOn(w, day - 1) && minute < w.end_min)) {
      return true;
    }
  }
  return false;
}

std::optional<core::TimePoint> nextWindowOpen(const std::vector<MaintenanceWindow>& windows, core::TimePoint t) {
  if (windowOpen(windows, t)) return t;
  const auto [today, _] = utcDay(t);
  std::optional<core::TimePoint> next;
  for (std::int64_t day = today; day <= today + 7; ++day)
    for (const auto& w : windows) {
      if (!opensOn(w, day)) continue;
      const core::TimePoint at{std::chrono::duration_cast<core::Clock_::duration>(
          std::chrono::minutes(day * kDayMinutes + w.start_min))};
      if (at > t && (!next || at < *next)) next = at;
    }
  return next;
}

std::optional<core::TimePoint> windowCloses(const std::vector<MaintenanceWindow>& windows, core::TimePoint t) {
  if (windows.empty() || !windowOpen(windows, t)) return std::nullopt;
  // Openness changes to closed only at a window's end: the first end after t that no other
  // window covers is when the open stretch ends.
  const auto [today, _] = utcDay(t);
  std::vector<core::TimePoint> ends;
  for (std::int64_t day = today - 1; day <= today + 8; ++day)
    for (const auto& w : windows) {
      if (!opensOn(w, day)) continue;
      const int end_day_offset = w.start_min < w.end_min ? 0 : 1;
      ends.push_back(core::TimePoint{std::chrono::duration_cast<core::Clock_::duration>(
          std::chrono::minutes((day + end_day_offset) * kDayMinutes + w.end_min))});
    }
  std::sort(ends.begin(), ends.end());
  for (const auto& e : ends)
    if (e > t && !windowOpen(windows, e)) return e;
  return std::nullopt;
}

std::optional<core::TimePoint> nextWindowFitting(const std::vector<MaintenanceWindow>& windows, core::TimePoint t,
                                                 core::Clock_::duration need) {
  core::TimePoint cursor = t;
  for (int stretch = 0; stretch < 64; ++stretch) {  // a week has at most 7 per window
    const auto open = nextWindowOpen(windows, cursor);
    if (!open || *open > t + std::chrono::hours(24 * 8)) return std::nullopt;
    const auto closes = windowCloses(windows, *open);
    if (!closes || *open + need <= *closes) return open;
    cursor = *closes;
  }
  return std::nullopt;
}

bool selectorMatches(const Selector& s, const PodFacts& p) {
  auto in = [](const std::vector<std::string>& v, const std::string& x) {
    return v.empty() || std::find(v.begin(), v.end(), x) != v.end();
  };
  if (!in(s.sites, p.site) || !in(s.buildings, p.building) || !in(s.platforms, p.platform) || !in(s.pods, p.id))
    return false;
  for (const auto& [k, v] : s.labels) {
    auto it = p.labels.find(k);
    if (it == p.labels.end() || it->second != v) return false;
  }
  return true;
}

Plan planRollout(const std::vector<PodFacts>& selected, const Policy& policy) {
  Plan plan;
  std::vector<const PodFacts*> eligible;
  for (const auto& p : selected) {
    if (!p.other_rollout.empty()) {
      plan.excluded.push_back({p.id, "in rollout " + p.other_rollout});
    } else if (!core::podInService(p.state)) {
      plan.excluded.push_back({p.id, "not in service (pod is " + std::string(core::podStateName(p.state)) + ")"});
    } else if (p.compliance.state == Compliance::kCompliant) {
      plan.excluded.push_back({p.id, "compliant"});
    } else if (p.compliance.state == Compliance::kIncompatible) {
      std::string why = "incompatible";
      if (!p.compliance.reasons.empty()) why += ": " + p.compliance.reasons.front();
      plan.excluded.push_back({p.id, why});
    } else if (p.allocated && policy.skip_allocated) {
      plan.excluded.push_back({p.id, "allocated to a job (policy skips allocated pods)"});
    } else {
      eligible.push_back(&p);
    }
  }
  std::sort(eligible.begin(), eligible.end(), [](const PodFacts* a, const PodFacts* b) { return a->id < b->id; });
  for (const auto* p : eligible)
    if (p->compliance.state == Compliance::kNeedsDowngrade) plan.downgrades.push_back({p->id, p->compliance.downgrades});
  std::vector<const PodFacts*> ordered;
  if (policy.order == "spread") {
    // Round-robin over buildings, so no building takes a whole wave.
    std::map<std::string, std::vector<const PodFacts*>> by_building;
    for (const auto* p : eligible) by_building[p->building].push_back(p);
    for (std::size_t i = 0; ordered.size() < eligible.size(); ++i)
      for (auto& [_, pods] : by_building)
        if (i < pods.size()) ordered.push_back(pods[i]);
  } else {
    ordered = eligible;
  }
  plan.eligible = static_cast<int>(ordered.size());
  std::size_t next = 0;
  const std::size_t n = ordered.size();
  auto take = [&](std::size_t upto) {
    std::vector<std::string> wave;
    for (; next < std::min(upto, n); ++next) wave.push_back(ordered[next]->id);
    if (!wave.empty()) plan.waves.push_back(std::move(wave));
  };
  take(static_cast<std::size_t>(std::max(0, policy.canary_pods)));
  for (std::size_t i = 0; i < policy.waves.size(); ++i) {
    const auto& w = policy.waves[i];
    std::size_t upto = w.percent ? static_cast<std::size_t>(std::ceil(w.value / 100.0 * static_cast<double>(n) - 1e-9))
                                 : static_cast<std::size_t>(w.value);
    if (i + 1 == policy.waves.size()) upto = n;
    take(std::max(upto, next));
  }
  take(n);
  return plan;
}

const std::vector<PodPhase>& allPodPhases() {
  static const std::vector<PodPhase> all{PodPhase::kPending,   PodPhase::kDraining,  PodPhase::kUpgrading,
                                         PodPhase::kValidating, PodPhase::kSucceeded, PodPhase::kFailed,
                                         PodPhase::kSkipped,   PodPhase::kAborted};
  return all;
}

const char* podPhaseName(PodPhase p) {
  switch (p) {
    case PodPhase::kPending: return "pending";
    case PodPhase::kDraining: return "draining";
    case PodPhase::kUpgrading: return "upgrading";
    case PodPhase::kValidating: return "validating";
    case PodPhase::kSucceeded: return "succeeded";
    case PodPhase::kFailed: return "failed";
    case PodPhase::kSkipped: return "skipped";
    case PodPhase::kAborted: return "aborted";
  }
  return "unknown";
}

std::optional<PodPhase> parsePodPhase(const std::string& s) {
  for (auto p : allPodPhases())
    if (s == podPhaseName(p)) return p;
  return std::nullopt;
}

bool inFlight(PodPhase p) { return p == PodPhase::kDraining || p == PodPhase::kUpgrading || p == PodPhase::kValidating; }
bool finished(PodPhase p) {
  return p == PodPhase::kSucceeded || p == PodPhase::kFailed || p == PodPhase::kSkipped || p == PodPhase::kAborted;
}

const std::vector<PodPhase>& inFlightPhases() {
  static const std::vector<PodPhase> phases = [] {
    std::vector<PodPhase> out;
    for (auto p : allPodPhases())
      if (inFlight(p)) out.push_back(p);
    return out;
  }();
  return phases;
}

const std::vector<PodPhase>& unfinishedPhases() {
  static const std::vector<PodPhase> phases = [] {
    std::vector<PodPhase> out;
    for (auto p : allPodPhases())
      if (!finished(p)) out.push_back(p);
    return out;
  }();
  return phases;
}

bool admissionCounts(core::HostState s) { return s == core::HostState::kAllocated || core::unservableAfterMaintenance(s); }

const std::vector<core::HostState>& admissionHostStates() {
  static const std::vector<core::HostState> states = [] {
    std::vector<core::HostState> out;
    for (auto s : core::allHostStates())
      if (admissionCounts(s)) out.push_back(s);
    return out;
  }();
  return states;
}

const char* rolloutStateName(RolloutState s) {
  switch (s) {
    case RolloutState::kCreated: return "created";
    case RolloutState::kRunning: return "running";
    case RolloutState::kPaused: return "paused";
    case RolloutState::kHalted: return "halted";
    case RolloutState::kAborting: return "aborting";
    case RolloutState::kCompleted: return "completed";
    case RolloutState::kAborted: return "aborted";
  }
  return "unknown";
}

const std::vector<RolloutState>& allRolloutStates() {
  static const std::vector<RolloutState> all{RolloutState::kCreated,  RolloutState::kRunning,   RolloutState::kPaused,
                                             RolloutState::kHalted,   RolloutState::kAborting,  RolloutState::kCompleted,
                                             RolloutState::kAborted};
  return all;
}

std::optional<RolloutState> parseRolloutState(const std::string& s) {
  for (auto st : allRolloutStates())
    if (s == rolloutStateName(st)) return st;
  return std::nullopt;
}

bool active(RolloutState s) {
  return s == RolloutState::kRunning || s == RolloutState::kPaused || s == RolloutState::kHalted ||
         s == RolloutState::kAborting;
}

const std::vector<RolloutState>& activeRolloutStates() {
  static const std::vector<RolloutState> states = [] {
    std::vector<RolloutState> out;
    for (auto s : allRolloutStates())
      if (active(s)) out.push_back(s);
    return out;
  }();
  return states;
}

bool finished(RolloutState s) { return s == RolloutState::kCompleted || s == RolloutState::kAborted; }

const std::vector<RolloutState>& unfinishedRolloutStates() {
  static const std::vector<RolloutState> states = [] {
    std::vector<RolloutState> out;
    for (auto s : allRolloutStates())
      if (!finished(s)) out.push_back(s);
    return out;
  }();
  return states;
}

std::string stateList(const std::vector<RolloutState>& states) {
  std::string out;
  for (auto s : states) out += (out.empty() ? "" : ", ") + std::string(rolloutStateName(s));
  return out;
}

int failureBudget(const Policy& pol, int eligible) {
  int budget = std::numeric_limits<int>::max();
  if (pol.failure_budget_pods) budget = std::min(budget, *pol.failure_budget_pods);
  if (pol.failure_budget_percent)
    budget = std::min(budget, static_cast<int>(std::floor(*pol.failure_budget_percent / 100.0 * eligible)));
  return budget;
}

AdmissionResult admit(const AdmissionInput& in) {
  AdmissionResult out;
  const Policy& pol = in.policy;
  int failed = 0, in_flight = 0, eligible = 0;
  int waves = 0;
  for (const auto& p : in.pods) {
    failed += p.phase == PodPhase::kFailed;
    in_flight += inFlight(p.phase);
    eligible += p.phase != PodPhase::kSkipped;
    waves = std::max(waves, p.wave + 1);
  }
  // Failure budget: halt when MORE than the budget failed.
  const int budget = failureBudget(pol, eligible);
  if (failed > budget) {
    out.halt = true;
    out.halt_reason = std::to_string(failed) + (failed == 1 ? " pod failed" : " pods failed") +
                      "; the failure budget allows " + std::to_string(budget);
  }
  // The current wave: the first with an unfinished pod.
  out.current_wave = waves;
  for (const auto& p : in.pods)
    if (!finished(p.phase)) out.current_wave = std::min(out.current_wave, p.wave);
  out.complete = out.current_wave == waves;
  if (out.complete) return out;

  // A wave starts only once the previous one finished and soaked.
  bool wave_started = false;
  for (const auto& p : in.pods)
    if (p.wave == out.current_wave && p.phase != PodPhase::kPending) wave_started = true;
  bool soaking = false;
  if (!wave_started && out.current_wave > 0 && in.previous_wave_finished &&
      in.now < *in.previous_wave_finished + pol.soak)
    soaking = true;

  // Outside every maintenance window no pod starts (and no job scheduler is asked).
  const bool window_open = windowOpen(pol.windows, in.now);
  std::string window_closed;
  if (!window_open) {
    std::string list;
    for (const auto& w : pol.windows) list += (list.empty() ? "" : ", ") + w.text;
    const auto next = nextWindowOpen(pol.windows, in.now);
    window_closed = "window: outside the maintenance windows (" + list + ")" +
                    (next ? "; the next opens " + utcText(*next) : std::string());
  } else if (in.pod_time_p90) {
    // A pod started now would still be out of service when the window closes.
    if (const auto closes = windowCloses(pol.windows, in.now); closes && in.now + *in.pod_time_p90 > *closes) {
      const auto next = nextWindowFitting(pol.windows, *closes, *in.pod_time_p90);
      window_closed = "window: the maintenance window closes " + utcText(*closes) + ", sooner than this rollout's P90 pod time (" +
                      std::to_string(in.pod_time_p90->count() / 60) + " min)" +
                      (next ? "; the next long enough opens " + utcText(*next)
                            : std::string("; no maintenance window within a week is that long"));
    }
  }

  std::map<std::string, BuildingLoad> load = in.buildings;
  for (const auto& p : in.pods) {
    if (p.phase != PodPhase::kPending) continue;
    std::string why;
    if (p.wave != out.current_wave) why = "wave " + std::to_string(p.wave) + " starts after wave " + std::to_string(out.current_wave);
    else if (in.halted || out.halt) why = "budget: the rollout is halted (failure budget)";
    else if (in.paused) why = "paused";
    else if (!window_closed.empty()) why = window_closed;
    else if (auto short_of = shortOfHosts(p.hosts)) why = *short_of;
    else if (soaking) why = "soak: waiting " + std::to_string(pol.soak.count()) + " s after the previous wave";
    else if (in_flight >= pol.max_concurrent_pods)
      why = "concurrency: " + std::to_string(in_flight) + " of max_concurrent_pods " + std::to_string(pol.max_concurrent_pods) + " in flight";
    if (why.empty()) {
      BuildingLoad& b = load[p.building];
      int max_down = std::numeric_limits<int>::max();
      if (pol.max_pods_down_per_building) max_down = std::min(max_down, *pol.max_pods_down_per_building);
      if (pol.max_fraction_down_per_building)
        max_down = std::min(max_down, static_cast<int>(std::floor(*pol.max_fraction_down_per_building * b.pods + 1e-9)));
      if (b.down + 1 > max_down)
        why = "capacity: building " + p.building + " has " + std::to_string(b.down) + " of " + std::to_string(b.pods) +
              " pods out of service (floor allows " + std::to_string(max_down) + ")";
      else if (b.upgrading + 1 > pol.max_rebooting_pods_per_building)
        why = "power: " + std::to_string(b.upgrading) + " pods of building " + p.building +
              " are flashing and rebooting (max " + std::to_string(pol.max_rebooting_pods_per_building) + ")";
      if (why.empty()) {
        // An allocated pod holds its slot while the scheduler releases it.
        ++in_flight;
        ++b.down;
        ++b.upgrading;
        if (!p.allocated) {
          out.admit.push_back(p.id);
          continue;
        }
        why = "allocated: waiting for the job scheduler to release the pod";
        out.release.push_back(p.id);
      }
    }
    out.waiting[p.id] = why;
  }
  return out;
}

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  std::size_t rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(values.size())));
  return values[std::clamp<std::size_t>(rank, 1, values.size()) - 1];
}

}  // namespace kiln::rollouts
