#include "orchestrator/scheduler/slurm.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>

namespace kiln::scheduler {

namespace {

bool startsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool contains(const std::string& haystack, std::initializer_list<const char*> needles) {
  for (const char* n : needles)
    if (haystack.find(n) != std::string::npos) return true;
  return false;
}

std::string joined(const std::vector<std::string>& v, const char* sep = ",") {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

long long epoch(TimePoint t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

}  // namespace

std::string SlurmNode::text() const {
  std::string out = state;
  for (const auto& f : flags) out += "+" + f;
  return out;
}

// ---- naming ----

Result<NodeNaming> NodeNaming::make(std::string rule, std::map<std::string, std::string> nodes) {
  static const std::set<std::string> kKnown = {"host", "pod", "tray", "tray2", "rack", "building", "site"};
  for (std::size_t i = 0; i < rule.size(); ++i) {
    if (rule[i] == '}') return invalidArgument("scheduler.node_name: '}' without '{' in '" + rule + "'");
    if (rule[i] != '{') continue;
    const auto close = rule.find('}', i);
    if (close == std::string::npos) return invalidArgument("scheduler.node_name: unclosed '{' in '" + rule + "'");
    const std::string key = rule.substr(i + 1, close - i - 1);
    if (!kKnown.count(key))
      return invalidArgument("scheduler.node_name: unknown placeholder {" + key +
                             "} (expected {host}, {pod}, {tray}, {tray2}, {rack}, {building} or {site})");
    i = close;
  }
  if (rule.empty() && nodes.empty()) return invalidArgument("scheduler.node_name: empty rule and no node map");
  for (const auto& [host, node] : nodes)
    if (host.empty() || node.empty()) return invalidArgument("scheduler.nodes: empty host or node name");
  NodeNaming n;
  n.rule = std::move(rule);
  n.nodes = std::move(nodes);
  return n;
}

std::string NodeNaming::nodeOf(const core::HostSummary& h) const {
  if (auto it = nodes.find(h.id); it != nodes.end()) return it->second;
  if (rule.empty()) return "";
  std::string out;
  for (std::size_t i = 0; i < rule.size(); ++i) {
    if (rule[i] != '{') {
      out += rule[i];
      continue;
    }
    const auto close = rule.find('}', i);
    const std::string key = rule.substr(i + 1, close - i - 1);
    if (key == "host") out += h.id;
    else if (key == "pod") out += h.pod;
    else if (key == "tray") out += std::to_string(h.tray);
    else if (key == "tray2") {
      char buf[16];
      std::snprintf(buf, sizeof buf, "%02d", h.tray);
      out += buf;
    } else if (key == "rack") out += h.rack;
    else if (key == "building") out += h.building;
    else if (key == "site") out += h.site;
    i = close;
  }
  return out;
}

// ---- reasons ----

std::string cleanReason(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    out += (u < 0x20 || u == 0x7f || c == '"' || c == '\'') ? ' ' : c;
  }
  if (out.size() > 200) {
    std::size_t cut = 200;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;  // not mid-character
    out.resize(cut);
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::string stateReason(const core::HostSummary& h) {
  std::string why = "kiln: " + std::string(core::hostStateName(h.state));
  if (!h.state_reason.empty()) why += " (" + h.state_reason + ")";
  return cleanReason(why);
}

std::string causeFromReason(std::string_view reason) {
  const std::string r = lower(reason);
  if (startsWith(r, "kiln:")) return "host_maintenance";
  if (contains(r, {"nvlink", "xid 74", "xid 79", "fabric manager", "nvswitch"}))
    return contains(r, {"nvswitch", "fabric"}) ? "nvswitch_fabric" : "nvlink_signal_integrity";
  if (contains(r, {"hbm", "ecc", "row remap", "xid 48", "xid 63", "xid 64", "xid 94", "xid 95"})) return "hbm";
  if (contains(r, {"lpddr", "dimm", "memory error"})) return "lpddr";
  if (contains(r, {"thermal", "temperature", "overheat", "cooling", "leak"})) return "thermal";
  if (contains(r, {"power", "psu", "pdu", "voltage"})) return "power";
  if (contains(r, {"infiniband", "ib link", "ib port", "rdma", "nic", "ethernet", "network", "link down"}))
    return "backend_network";
  if (contains(r, {"storage", "nfs", "lustre", "gpfs", "disk", "filesystem"})) return "storage";
  if (contains(r, {"xid", "gpu", "fell off the bus"})) return "gpu";
  if (contains(r, {"kernel", "driver", "software", "kill task failed", "epilog", "prolog"})) return "software";
  return "unknown";
}

// ---- the gate ----

std::optional<std::string> drainHeldBack(const std::string& node, const SlurmNode* observed, bool known_to_slurm,
                                         const std::vector<SlurmJob>& jobs_on_node) {
  if (!known_to_slurm) return std::nullopt;  // Slurm cannot run a job on a node it does not know
  if (observed == nullptr) return "slurm node " + node + ": waiting for Slurm's view after Kiln's last change";
  if (!observed->drain()) return "slurm node " + node + " is " + observed->text() + ": waiting for Kiln's drain";
  if (observed->busy()) {
    std::vector<std::string> ids;
    for (const auto& j : jobs_on_node) ids.push_back(j.id);
    return "slurm node " + node + " is " + observed->text() + (ids.empty() ? "" : " (job " + joined(ids) + " running)") +
           ": waiting for its jobs to leave";
  }
  return std::nullopt;
}

// ---- reconcile ----

ReconcilePlan reconcile(const ReconcileInput& in, const NodeNaming& naming) {
  ReconcilePlan plan;
  std::map<std::string, const SlurmNode*> nodes;
  for (const auto& n : in.nodes) nodes[n.name] = &n;
  std::map<std::string, const Drain*> ledger;
  for (const auto& d : in.ledger) ledger[d.node] = &d;
  std::map<std::string, std::vector<const SlurmJob*>> jobs_on;  // running or completing, by node
  for (const auto& j : in.jobs)
    if (j.state == "RUNNING" || j.state == "COMPLETING" || j.state == "SUSPENDED")
      for (const auto& n : j.nodes) jobs_on[n].push_back(&j);
  std::map<std::string, std::string> host_of_node;

  for (const auto& h : in.hosts) {
    const std::string node = naming.nodeOf(h);
    if (node.empty() || h.state == core::HostState::kRetired) continue;
    host_of_node[node] = h.id;
    auto seen = nodes.find(node);
    if (seen == nodes.end()) {
      if (!core::servesJobs(h.state)) continue;  // a host Slurm does not know cannot hold a job
      plan.notices.push_back({h.id, node, "host " + h.id + " maps to Slurm node " + node + ", which Slurm does not know", true});
      continue;
    }
    const SlurmNode& n = *seen->second;
    auto mine = ledger.find(node);
    const Drain* drain = mine == ledger.end() ? nullptr : mine->second;

    // A rollout's ask stands until the host has been out of service and back, or (never taken)
    // for an hour after it was made: a paused rollout keeps its nodes, an abandoned one not forever.
    std::optional<DrainRequest> request;
    if (auto r = in.requests.find(h.id); r != in.requests.end()) {
      DrainRequest kept = r->second;
      if (!core::servesJobs(h.state)) kept.touched = true;
      const bool done = core::servesJobs(h.state) && (kept.touched || in.now - kept.at > std::chrono::hours(1));
      if (!done) {
        request = kept;
        plan.requests[h.id] = kept;
      }
    }
    const bool want_drained = !core::servesJobs(h.state) || request.has_value();

    if (want_drained) {
      if (!n.drain()) {
        Drain d{node, h.id, request ? cleanReason(request->reason) : stateReason(h), in.now};
        plan.drain.push_back(d);
      } else if (drain == nullptr && n.reason == "Prolog error") {
        // Slurm's own words for a failed prolog: Kiln's pre-job check (kilnctl slurm prolog)
        // failed the host. Kiln writes its reason over Slurm's and owns the drain from then on.
        plan.drain.push_back({node, h.id, stateReason(h), in.now});
      } else if (drain == nullptr && startsWith(n.reason, "kiln:")) {
        // Drained with Kiln's prefix by Kiln's own prolog (kilnctl slurm prolog) or by a
        // kilnd that lost its ledger row: Kiln's, so Kiln resumes it once the host is back.
        plan.adopt.push_back({node, h.id, n.reason, in.now});
      } else if (drain != nullptr && n.reason != drain->reason) {
        plan.forget.push_back(node);
        plan.notices.push_back({h.id, node,
                                "slurm node " + node + " was drained by Kiln (" + drain->reason + ") and is now '" + n.reason +
                                    "' (set by " + (n.reason_user.empty() ? "someone else" : n.reason_user) +
                                    "): Kiln leaves it to them and will not resume it",
                                true});
      }
      if (request && in.policy == JobPolicy::kRequeue && n.busy())
        for (const SlurmJob* j : jobs_on[node])
          if (j->state == "RUNNING") plan.requeue.push_back(j->id);
    } else if (drain == nullptr) {
      if (n.drain() || n.down())
        plan.notices.push_back({h.id, node,
                                "slurm node " + node + " of host " + h.id + " is " + n.text() + " (" +
                                    (n.reason.empty() ? std::string("no reason") : n.reason) +
                                    (n.reason_user.empty() ? std::string() : ", set by " + n.reason_user) +
                                    "): unavailable to jobs; Kiln did not drain it and leaves it alone",
                                false});
    } else {
      if (!n.drain()) {
        plan.forget.push_back(node);  // someone resumed it already
        plan.notices.push_back({h.id, node, "slurm node " + node + " was resumed outside Kiln", false});
      } else if (n.reason == drain->reason) {
        // Back in service since the drain: resume. A host in service since before it (the
        // release ask of an allocated host whose job still runs, remembered by the ledger
        // across a restart that lost the ask) keeps its node drained.
        if (h.state_since > drain->at) plan.resume.push_back(*drain);
      } else {
        plan.forget.push_back(node);
        plan.notices.push_back({h.id, node,
                                "slurm node " + node + " was drained by Kiln and is now '" + n.reason + "' (set by " +
                                    (n.reason_user.empty() ? "someone else" : n.reason_user) + "): Kiln will not resume it",
                                true});
      }
    }

    // Jobs decide available <-> allocated.
    if (h.state == core::HostState::kAvailable && n.busy() && !jobs_on[node].empty()) {
      std::vector<std::string> ids;
      for (const SlurmJob* j : jobs_on[node]) ids.push_back(j->id);
      plan.moves.push_back({h.id, core::HostAction::kAllocate, std::nullopt, "slurm: job " + joined(ids) + " on node " + node});
    } else if (h.state == core::HostState::kAllocated && !n.busy()) {
      plan.moves.push_back({h.id, core::HostAction::kRelease, std::nullopt,
                            "slurm: no job left on node " + node + " (" + n.text() + ")"});
    } else if (!core::servesJobs(h.state) && n.busy() && !n.down()) {
      plan.notices.push_back({h.id, node, "host " + h.id + " is " + std::string(core::hostStateName(h.state)) + " in Kiln while Slurm runs a job on node " + node, true});
    }
  }

  // Interruptions: a job that ended NODE_FAIL, or a node that went down under a running job.
  auto hostsOf = [&](const std::vector<std::string>& job_nodes) {
    std::vector<std::string> hosts;
    for (const auto& n : job_nodes)
      if (auto it = host_of_node.find(n); it != host_of_node.end()) hosts.push_back(it->second);
    return hosts;
  };
  auto downReason = [&](const std::vector<std::string>& job_nodes) -> std::pair<std::string, std::string> {
    for (const auto& name : job_nodes)
      if (auto it = nodes.find(name); it != nodes.end() && (it->second->down() || it->second->drain()) && !it->second->reason.empty())
        return {name, it->second->reason};
    return {"", ""};
  };
  auto interruption = [&](const SlurmJob& j, TimePoint at, const std::string& how) {
    auto hosts = hostsOf(j.nodes);
    if (hosts.empty() || !j.start) return;
    const auto [node, reason] = downReason(j.nodes);
    reliability::Interruption i;
    i.id = "slurm-" + j.id + "-" + std::to_string(epoch(*j.start));
    i.at = at;
    i.job = j.id;
    i.job_gpus = j.gpus;
    i.owner = "slurm";
    i.hosts = std::move(hosts);
    i.cause = reason.empty() ? "unknown" : causeFromReason(reason);
    i.description = "Slurm job " + j.id + " " + how + " on " + joined(j.nodes) +
                    (reason.empty() ? std::string() : " (node " + node + ": " + reason + ")");
    plan.interruptions.push_back(std::move(i));
  };
  std::set<std::string> failed_jobs;
  for (const auto& j : in.jobs) {
    if (j.state == "RUNNING") {
      for (const auto& n : j.nodes) plan.running[n].push_back(j);
    } else if (j.state == "NODE_FAIL") {
      failed_jobs.insert(j.id);
      interruption(j, j.end.value_or(in.now), "ended NODE_FAIL");
    }
  }
  std::set<std::string> reported;
  for (const auto& [node, jobs] : in.running_before) {
    auto now = nodes.find(node);
    // DOWN, not NOT_RESPONDING alone: a slurmd that answers again keeps its jobs.
    if (now == nodes.end() || now->second->state != "DOWN") continue;
    for (const auto& j : jobs) {
      if (failed_jobs.count(j.id) || !reported.insert(j.id).second) continue;
      interruption(j, now->second->reason_time.value_or(in.now), "lost its node " + node + " (DOWN)");
    }
  }
  return plan;
}

}  // namespace kiln::scheduler
