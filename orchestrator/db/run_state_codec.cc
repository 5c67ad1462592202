#include "orchestrator/db/run_state_codec.h"

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kiln::db {
namespace {

using nlohmann::json;
using runs::TimePoint;

std::int64_t toMillis(TimePoint t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}
TimePoint fromMillis(std::int64_t ms) {
  return TimePoint(std::chrono::duration_cast<TimePoint::duration>(std::chrono::milliseconds(ms)));
}

}  // namespace

json storedRecord(const runs::StepRecord& r) {
  return {{"step", r.step_id},
          {"pass", r.pass},
          {"attempt", r.attempt},
          {"retest_round", r.retest_round},
          {"outcome", r.outcome},
          {"message", r.message},
          {"exit_code", r.exit_code},
          {"duration_ms", r.duration_ms},
          {"finished_at_ms", toMillis(r.finished_at)},
          {"assignment", r.assignment_id},
          {"checks", r.checks}};
}

json storedGroup(const runs::GroupState& g, Records records) {
  json hosts = json::array();
  for (const auto& h : g.hosts) {
    json history = json::array();
    if (records == Records::kWith)
      for (const auto& r : h.history) history.push_back(storedRecord(r));
    json shared = json::object();
    for (const auto& [key, o] : h.leader_outcomes) shared[key] = {{"outcome", o.outcome}, {"message", o.message}};
    json j = {{"host", h.host},
              {"fields", h.fields},
              {"status", runs::hostStatusName(h.status)},
              {"pass", h.pass},
              {"step_index", h.step_index},
              {"attempt", h.attempt},
              {"assignment", h.assignment_id},
              {"dispatched_at_ms", toMillis(h.dispatched_at)},
              {"parsed", h.parsed},
              {"soft_failed", h.soft_failed},
              {"failures", h.failures},
              {"warnings", h.warnings},
              {"history", history},
              {"leader_outcomes", shared}};
    j["not_before_ms"] = h.not_before ? json(toMillis(*h.not_before)) : json();
    if (!h.waiting_for.empty()) j["waiting_for"] = h.waiting_for;  // absent before issue 35's gate
    // A reboot's recovery through the BMC (issue 32): only while it has begun.
    if (h.power_cycles != 0) j["power_cycles"] = h.power_cycles;
    if (!h.recovery_assignment.empty()) {
      j["recovery_assignment"] = h.recovery_assignment;
      j["recovery_step"] = h.recovery_step;
    }
    if (h.retest)
      j["retest"] = {{"step_index", h.retest->step_index},
                     {"from_index", h.retest->from_index},
                     {"rounds_left", h.retest->rounds_left},
                     {"round", h.retest->round},
                     {"elements", h.retest->elements}};
    hosts.push_back(std::move(j));
  }
  return {{"run_id", g.run_id},       {"group", g.group},       {"next_seq", g.next_seq},
          {"cancelled", g.cancelled}, {"stopping", g.stopping}, {"hosts", hosts}};
}

Result<runs::StepRecord> recordFromStored(const json& rj) {
  try {
    runs::StepRecord r;
    r.step_id = rj.at("step").get<std::string>();
    r.pass = rj.at("pass").get<int>();
    r.attempt = rj.at("attempt").get<int>();
    r.retest_round = rj.at("retest_round").get<int>();
    r.outcome = rj.at("outcome").get<std::string>();
    r.message = rj.at("message").get<std::string>();
    r.exit_code = rj.at("exit_code").get<int>();
    r.duration_ms = rj.at("duration_ms").get<std::int64_t>();
    r.finished_at = fromMillis(rj.at("finished_at_ms").get<std::int64_t>());
    r.assignment_id = rj.at("assignment").get<std::string>();
    r.checks = rj.at("checks");
    return r;
  } catch (const std::exception& e) {
    return internalError(std::string("corrupt step record: ") + e.what());
  }
}

Result<runs::GroupState> groupFromStored(const json& j) {
  using runs::HostStatus;
  try {
    runs::GroupState g;
    g.run_id = j.at("run_id").get<std::string>();
    g.group = j.at("group").get<std::string>();
    g.next_seq = j.at("next_seq").get<std::int64_t>();
    g.cancelled = j.at("cancelled").get<bool>();
    g.stopping = j.value("stopping", false);
    for (const auto& hj : j.at("hosts")) {
      runs::HostRun h;
      h.host = hj.at("host").get<std::string>();
      h.fields = hj.at("fields").get<workflow::ContextFields>();
      const std::string st = hj.at("status").get<std::string>();
      for (auto s : {HostStatus::kPending, HostStatus::kRunning, HostStatus::kPassed, HostStatus::kFailed,
                     HostStatus::kCancelled})
        if (st == runs::hostStatusName(s)) h.status = s;
      h.pass = hj.at("pass").get<int>();
      h.step_index = hj.at("step_index").get<std::size_t>();
      h.attempt = hj.at("attempt").get<int>();
      h.assignment_id = hj.at("assignment").get<std::string>();
      h.dispatched_at = fromMillis(hj.at("dispatched_at_ms").get<std::int64_t>());
      if (!hj.at("not_before_ms").is_null()) h.not_before = fromMillis(hj.at("not_before_ms").get<std::int64_t>());
      h.waiting_for = hj.value("waiting_for", std::string());
      h.power_cycles = hj.value("power_cycles", 0);
      h.recovery_assignment = hj.value("recovery_assignment", std::string());
      h.recovery_step = hj.value("recovery_step", std::size_t{0});
      for (const auto& [k, v] : hj.at("parsed").items()) h.parsed[k] = v;
      h.soft_failed = hj.at("soft_failed").get<bool>();
      h.failures = hj.at("failures").get<std::vector<std::string>>();
      h.warnings = hj.at("warnings").get<std::vector<std::string>>();
      if (hj.contains("retest")) {
        const auto& rj = hj["retest"];
        runs::RetestState rt;
        rt.step_index = rj.at("step_index").get<std::size_t>();
        rt.from_index = rj.at("from_index").get<std::size_t>();
        rt.rounds_left = rj.at("rounds_left").get<int>();
        rt.round = rj.at("round").get<int>();
        rt.elements = rj.at("elements").get<std::map<std::string, std::vector<bool>>>();
        h.retest = rt;
      }
      if (hj.contains("leader_outcomes"))
        for (const auto& [key, o] : hj["leader_outcomes"].items())
          h.leader_outcomes[key] = {o.at("outcome").get<std::string>(), o.at("message").get<std::string>()};
      if (hj.contains("history"))
        for (const auto& rj : hj["history"]) {
          auto r = recordFromStored(rj);
          if (!r.ok()) return r.error();
          h.history.push_back(std::move(*r));
        }
      // A state written before the step log (schema 16) embeds every record and has no leader
      // outcomes: the records load as pending (the next write moves them to the log) and each
      // step's newest initial-run record is kept as a leader outcome; without the workflow at
      // hand that is every step's, of which followers read only the leader steps'.
      if (!hj.contains("leader_outcomes"))
        for (const auto& r : h.history)
          if (r.retest_round == 0) h.leader_outcomes[runs::leaderKey(r.step_id, r.pass)] = {r.outcome, r.message};
      g.hosts.push_back(std::move(h));
    }
    return g;
  } catch (const std::exception& e) {
    return internalError(std::string("corrupt run state: ") + e.what());
  }
}

nlohmann::json storedArtifacts(const std::vector<protocol::ArtifactRef>& artifacts) {
  if (artifacts.empty()) return nullptr;
  nlohmann::json out = nlohmann::json::array();
  for (const auto& a : artifacts)
    out.push_back({{"url", a.url}, {"sha256", a.sha256}, {"checksums", a.checksums}, {"signature", a.signature}});
  return out;
}

Result<std::vector<protocol::ArtifactRef>> artifactsFromStored(const nlohmann::json& j) {
  std::vector<protocol::ArtifactRef> out;
  if (j.is_null()) return out;
  try {
    if (!j.is_array()) return internalError("corrupt assignment artifacts: not a list");
    for (const auto& a : j)
      out.push_back({a.at("url").get<std::string>(), a.at("sha256").get<std::string>(),
                     a.at("checksums").get<std::string>(), a.at("signature").get<std::string>()});
    return out;
  } catch (const std::exception& e) {
    return internalError(std::string("corrupt assignment artifacts: ") + e.what());
  }
}

}  // namespace kiln::db
