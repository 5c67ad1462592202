#pragma once
// A complete reliability::ReliabilityStore for tests, in memory, answering as the PostgreSQL
// store does (orchestrator/db/pg_reliability_store.cc) from what a test gives it: the fleet's
// pods and hosts, the hosts' events (host_events: the source of hosts in service, by the rule of
// kiln_service_delta, and of repairs), the interruptions recorded and the candidates Kiln
// records itself. data() rolls the events up per day and hour as service_days and service_hours
// do. orchestrator/db/tests/reliability_store_contract_test.cc runs both through one suite.
// Thread-safe.

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "orchestrator/core/testing/fake_audit_log.h"
#include "orchestrator/reliability/reliability_service.h"

namespace kiln::reliability::testing {

class FakeReliabilityStore final : public ReliabilityStore {
 public:
  // `audit`: where record()'s audit records go (none kept when null).
  explicit FakeReliabilityStore(core::testing::FakeAuditLog* audit = nullptr) : audit_(audit) {}

  // A pod of the fleet, and a host of one (its state is what lemons report; events do not move it).
  void addPod(const std::string& id, const std::string& site, const std::string& building,
              const std::string& platform) {
    std::lock_guard lock(mu_);
    pods_[id] = {site, building, platform};
  }
  void addHost(const std::string& id, const std::string& pod, const std::string& state = "available") {
    std::lock_guard lock(mu_);
    hosts_[id] = {pod, state};
  }
  // A host event of a host addHost added: `action` ("repair" counts toward lemons), the states
  // it moved between ("" for none).
  void addHostEvent(const std::string& host, TimePoint at, const std::string& action, const std::string& from_state,
                    const std::string& to_state) {
    std::lock_guard lock(mu_);
    events_.push_back({host, at, action, serviceDelta(from_state, to_state)});
  }
  // An interruption candidate, as Kiln records one when an allocated host fails (the PostgreSQL
  // store's host transitions write it; record() never does).
  void addCandidate(Interruption i) {
    std::lock_guard lock(mu_);
    std::sort(i.hosts.begin(), i.hosts.end());
    i.hosts.erase(std::unique(i.hosts.begin(), i.hosts.end()), i.hosts.end());
    i.candidate = true;
    interruptions_[i.id] = std::move(i);
  }
  // Every interruption held (recorded or candidate), by id.
  std::vector<Interruption> interruptions() const {
    std::lock_guard lock(mu_);
    std::vector<Interruption> out;
    for (const auto& [_, i] : interruptions_) out.push_back(i);
    return out;
  }

  // Hosts are kept sorted without repeats; `at` is compared to the second (what the SQL
  // compares); i.candidate is not taken (a recorded interruption is confirmed).
  Result<bool> record(const Interruption& in, const core::Actor& actor) override {
    std::lock_guard lock(mu_);
    Interruption i = in;
    std::sort(i.hosts.begin(), i.hosts.end());
    i.hosts.erase(std::unique(i.hosts.begin(), i.hosts.end()), i.hosts.end());
    i.candidate = false;
    if (auto it = interruptions_.find(i.id); it != interruptions_.end()) {
      const Interruption& e = it->second;
      const bool same = std::llround(seconds(e.at)) == std::llround(seconds(i.at)) && e.job == i.job &&
                        e.job_gpus.value_or(-1) == i.job_gpus.value_or(-1) && e.pod == i.pod && e.cause == i.cause &&
                        e.owner == i.owner && e.description == i.description && e.hosts == i.hosts;
      if (same) return false;
      return conflict("interruption '" + i.id + "' was recorded with other content: use a new id").with("id", i.id);
    }
    for (const auto& h : i.hosts)
      if (!hosts_.contains(h)) return Error(invalidContent("no host '" + h + "'")).with("field", "hosts");
    if (!i.pod.empty() && !pods_.contains(i.pod))
      return Error(invalidContent("no pod '" + i.pod + "'")).with("field", "pod");
    const std::size_t hosts = i.hosts.size();
    interruptions_[i.id] = std::move(i);
    if (audit_) {
      auto written = audit_->audit(actor, "interruption.record", in.id,
                                   nlohmann::json{{"cause", in.cause}, {"hosts", hosts}}.dump());
      if (!written.ok()) return written.error();
    }
    return true;
  }

  Result<core::Page<Interruption>> list(TimePoint from, TimePoint to, const std::string& cause,
                                        std::optional<bool> candidate, const core::PageRequest& page) override {
    const int limit = std::clamp(page.limit, 1, 1000);
    std::optional<std::pair<std::int64_t, std::string>> after;
    if (!page.cursor.empty()) {
      after = parseCursor(page.cursor);
      if (!after) return invalidArgument("cursor is not valid (pass back next_cursor of the previous page unchanged)");
    }
    std::lock_guard lock(mu_);
    std::vector<const Interruption*> rows;
    for (const auto& [_, i] : interruptions_) {
      if (i.at < from || !(i.at < to)) continue;
      if (!cause.empty() && i.cause != cause) continue;
      if (candidate && i.candidate != *candidate) continue;
      if (after && !(micros(i.at) < after->first || (micros(i.at) == after->first && i.id > after->second))) continue;
      rows.push_back(&i);
    }
    std::sort(rows.begin(), rows.end(), [](const Interruption* a, const Interruption* b) {
      return a->at != b->at ? a->at > b->at : a->id < b->id;
    });
    core::Page<Interruption> out;
    for (const Interruption* i : rows) {
      if (static_cast<int>(out.items.size()) == limit) {
        const Interruption& last = out.items.back();
        out.next_cursor = std::to_string(micros(last.at)) + "." + last.id;
        break;
      }
      out.items.push_back(*i);
    }
    return out;
  }

  Result<LedgerData> data(TimePoint from, TimePoint to, const Scope& scope, int lemon_threshold) override {
    std::lock_guard lock(mu_);
    const bool fleet = scope.site.empty() && scope.building.empty() && scope.platform.empty();
    auto podIn = [&](const std::string& pod) {
      auto p = pods_.find(pod);
      return p != pods_.end() && (scope.site.empty() || p->second.site == scope.site) &&
             (scope.building.empty() || p->second.building == scope.building) &&
             (scope.platform.empty() || p->second.platform == scope.platform);
    };
    auto hostIn = [&](const std::string& host) {
      auto h = hosts_.find(host);
      return h != hosts_.end() && podIn(h->second.pod);
    };
    LedgerData d;

    // Hosts in service, as the rollup tables hold them: only events that change the level count.
    const RollupWindow w = rollupWindow(from, to);
    std::vector<const Event*> deltas;
    for (const auto& e : events_)
      if (e.delta != 0 && hostIn(e.host)) deltas.push_back(&e);
    std::stable_sort(deltas.begin(), deltas.end(), [](const Event* a, const Event* b) { return a->at < b->at; });
    auto inRanges = [](TimePoint t, const std::vector<std::pair<TimePoint, TimePoint>>& ranges) {
      return std::any_of(ranges.begin(), ranges.end(), [&](const auto& r) { return t >= r.first && t < r.second; });
    };
    std::map<TimePoint, ServicePeriod> days, hours, all_hours;
    for (const Event* e : deltas) {
      const TimePoint day = dayStart(e->at), hour = hourStart(e->at);
      if (e->at < w.first_day) d.service_level_at_first_day += e->delta;
      if (e->at >= w.first_day && e->at < w.days_end) addTo(days, day, day + std::chrono::hours(24), *e);
      if (inRanges(e->at, w.hour_ranges)) addTo(hours, hour, hour + std::chrono::hours(1), *e);
      if (inRanges(e->at, w.raw_ranges)) d.service_raw_deltas.emplace_back(e->at, e->delta);
      addTo(all_hours, hour, hour + std::chrono::hours(1), *e);
    }
    for (const auto& [_, p] : days) d.service_days.push_back(p);
    for (const auto& [_, p] : hours) d.service_hours.push_back(p);
    // The first hour that changed the level, then the first host entering service in it.
    for (const auto& [hour, p] : all_hours) {
      if (p.net_hosts == 0 && p.tail_host_us == 0) continue;
      d.history_start = hour;
      for (const Event* e : deltas)
        if (e->delta > 0 && e->at >= hour && e->at < hour + std::chrono::hours(1)) {
          d.history_start = e->at;
          break;
        }
      break;
    }

    // Interruptions in scope (by their pod or one of their hosts), by week, cause and flag.
    std::map<std::tuple<TimePoint, std::string, bool>, std::int64_t> counts;
    for (const auto& [_, i] : interruptions_) {
      if (i.at < from || !(i.at < to)) continue;
      const bool in = fleet || (!i.pod.empty() && podIn(i.pod)) || std::any_of(i.hosts.begin(), i.hosts.end(), hostIn);
      if (in) ++counts[{weekStart(i.at), i.cause, i.candidate}];
    }
    for (const auto& [key, n] : counts)
      d.interruptions.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), n});

    // Lemons: interruptions (candidates too) and repairs per host in [from, to), worst first.
    std::map<std::string, std::pair<int, int>> per_host;
    for (const auto& [_, i] : interruptions_)
      if (i.at >= from && i.at < to)
        for (const auto& h : i.hosts) ++per_host[h].first;
    for (const auto& e : events_)
      if (e.action == "repair" && e.at >= from && e.at < to) ++per_host[e.host].second;
    for (const auto& [host, n] : per_host) {
      if (n.first + n.second <= lemon_threshold || !hostIn(host)) continue;
      const Host& h = hosts_.at(host);
      d.lemons.push_back({host, h.pod, h.state, n.first, n.second});
    }
    std::stable_sort(d.lemons.begin(), d.lemons.end(), [](const LedgerData::Lemon& a, const LedgerData::Lemon& b) {
      return a.interruptions + a.repairs > b.interruptions + b.repairs;
    });
    if (d.lemons.size() > 500) d.lemons.resize(500);
    return d;
  }

  // Confirmed interruptions (not candidates) by cause.
  Result<std::map<std::string, std::int64_t>> countsByCause() override {
    std::lock_guard lock(mu_);
    std::map<std::string, std::int64_t> out;
    for (const auto& [_, i] : interruptions_)
      if (!i.candidate) ++out[i.cause];
    return out;
  }

 private:
  struct Pod {
    std::string site, building, platform;
  };
  struct Host {
    std::string pod, state;
  };
  struct Event {
    std::string host;
    TimePoint at;
    std::string action;
    int delta = 0;
  };

  // kiln_service_delta (db/migrations/0005_service_days.sql): entering (+1) or leaving (-1)
  // the serving states.
  static int serviceDelta(const std::string& from, const std::string& to) {
    auto serving = [](const std::string& s) { return s == "available" || s == "allocated"; };
    return static_cast<int>(serving(to)) - static_cast<int>(serving(from));
  }
  static double seconds(TimePoint t) { return std::chrono::duration<double>(t.time_since_epoch()).count(); }
  static std::int64_t micros(TimePoint t) {
    return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
  }
  static TimePoint hourStart(TimePoint t) { return std::chrono::floor<std::chrono::hours>(t); }
  // A period's net_hosts and tail_host_us (the microseconds from the change to its end).
  static void addTo(std::map<TimePoint, ServicePeriod>& periods, TimePoint start, TimePoint end, const Event& e) {
    ServicePeriod& p = periods[start];
    p.start = start;
    p.net_hosts += e.delta;
    p.tail_host_us += e.delta * std::chrono::duration_cast<std::chrono::microseconds>(end - e.at).count();
  }
  // "<at in epoch microseconds>.<id>", as the PostgreSQL store writes next_cursor.
  static std::optional<std::pair<std::int64_t, std::string>> parseCursor(const std::string& cursor) {
    const auto dot = cursor.find('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 >= cursor.size() || cursor[0] == '+' || cursor[0] == ' ')
      return std::nullopt;
    try {
      std::size_t used = 0;
      const std::int64_t n = std::stoll(cursor.substr(0, dot), &used);
      if (used == dot) return std::pair{n, cursor.substr(dot + 1)};
    } catch (...) {
    }
    return std::nullopt;
  }

  core::testing::FakeAuditLog* audit_;
  mutable std::mutex mu_;
  std::map<std::string, Pod> pods_;
  std::map<std::string, Host> hosts_;
  std::vector<Event> events_;
  std::map<std::string, Interruption> interruptions_;
};

}  // namespace kiln::reliability::testing
