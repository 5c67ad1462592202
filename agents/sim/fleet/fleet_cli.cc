#include "agents/sim/fleet/fleet_cli.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "agents/sim/host_sim.h"

namespace kiln::vfleet {

using nlohmann::json;

namespace {

Result<double> toDouble(const std::string& flag, const std::string& v) {
  try {
    size_t used = 0;
    double d = std::stod(v, &used);
    if (used == v.size()) return d;
  } catch (const std::exception&) {
  }
  return invalidArgument(flag + " needs a number, got '" + v + "'");
}

Result<std::int64_t> toInt(const std::string& flag, const std::string& v, std::int64_t lo,
                           std::int64_t hi) {
  try {
    size_t used = 0;
    long long n = std::stoll(v, &used);
    if (used == v.size() && n >= lo && n <= hi) return static_cast<std::int64_t>(n);
  } catch (const std::exception&) {
  }
  return invalidArgument(flag + " needs a whole number from " + std::to_string(lo) + " to " +
                         std::to_string(hi) + ", got '" + v + "'");
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep)) out.push_back(cur);
  return out;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

// Wider than this, most of the tail sits at kMaxDurationFactor and the spread is mostly the cap.
constexpr double kMaxDurationSpread = 2.0;

}  // namespace

std::string usage() {
  return "usage: kiln-vfleet --url http://HOST:PORT --enroll-token-file F --hosts SPEC [options]\n"
         "  SPEC: all | pod:ID[,ID...] | FILE (one host per line, optionally its platform)\n"
         "  --token-file F         viewer/admin token: lists hosts for all/pod:, reads pod versions\n"
         "  --state-dir DIR        keep agent tokens and simulated host state across restarts\n"
         "  --time-scale X         tool durations x X (default 1; 0.001 = a 10 s diag in 10 ms)\n"
         "  --duration-spread S    each step's tool time x a log-normal factor of median 1 and\n"
         "                         shape S, 0-2 (default 0: nominal times; 0.25: ~95% of steps\n"
         "                         within 0.6x-1.6x), at most 4x and short of the step's\n"
         "                         timeout; drawn from --seed, the host and the assignment id\n"
         "  --poll-wait S          long-poll wait, 0-60 (default 25)\n"
         "  --connections N        HTTP keep-alive connections at most (default 1024)\n"
         "  --idle-poll S          idle hosts without a long-poll slot poll this often (default 30)\n"
         "  --running-poll-delay-ms N  a step's first running= poll after N ms, 0-60000 (default\n"
         "                         1000, as kiln-agent; 0 = at once, as before)\n"
         "  --fault-kind K[:k=v,..] seeded start-up fault (repeatable); keys gpu link count tool\n"
         "                         factor xid; with --fault-seed S (1) and --fault-rate R (0.01)\n"
         "  --fault HOST:K[:k=v,..] a fault on one host (repeatable)\n"
         "  --control-file F       lines 'fault HOST K[:k=v,..]' / 'clear HOST [K]' appended at\n"
         "                         run time are applied within 2 s\n"
         "  --max-hosts N          simulate at most N hosts\n"
         "  --status-interval S    status line every S seconds (default 10; 0 = never)\n"
         "  --ramp S               spread enrolments over S seconds (default hosts/500, <= 30)\n"
         "  --seed N               jitter seed (default random)\n"
         "  --no-adopt-versions    keep the simulator's default firmware versions\n"
         "  --log-level L          debug, info, warn, error (default info)\n"
         "SIGTERM/SIGINT stop it cleanly.\n";
}

Result<sim::Fault> parseFaultSpec(const std::string& spec) {
  auto parts = split(spec, ':');
  if (parts.empty() || parts[0].empty()) return invalidArgument("empty fault spec");
  auto kind = sim::parseFaultKind(parts[0]);
  if (!kind) return invalidArgument("unknown fault kind '" + parts[0] + "'");
  sim::Fault f;
  f.kind = *kind;
  if (parts.size() > 2) return invalidArgument("fault spec '" + spec + "': one ':' before the options");
  if (parts.size() == 2) {
    for (const auto& kv : split(parts[1], ',')) {
      auto eq = kv.find('=');
      if (eq == std::string::npos) return invalidArgument("fault option '" + kv + "' is not key=value");
      const std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
      if (k == "tool") {
        f.tool = v;
      } else if (k == "factor") {
        auto d = toDouble("factor", v);
        if (!d.ok()) return d.error();
        f.factor = *d;
      } else if (k == "gpu" || k == "link" || k == "count" || k == "xid") {
        auto n = toInt(k, v, -1, 1 << 20);
        if (!n.ok()) return n.error();
        (k == "gpu" ? f.gpu : k == "link" ? f.link : k == "count" ? f.remaining : f.xid) =
            static_cast<int>(*n);
      } else {
        return invalidArgument("unknown fault option '" + k + "'");
      }
    }
  }
  if (f.kind == sim::FaultKind::kXid && f.xid == 0) return invalidArgument("an xid fault needs xid=N");
  return f;
}

Result<CliOptions> parseCli(const std::vector<std::string>& args) {
  CliOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i];
    std::optional<std::string> inline_value;
    if (auto eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      inline_value = flag.substr(eq + 1);
      flag.resize(eq);
    }
    if (flag == "-h" || flag == "--help") return invalidArgument("help");
    if (flag == "--no-adopt-versions") {
      o.adopt_versions = false;
      continue;
    }
    std::string v;
    if (inline_value) {
      v = *inline_value;
    } else {
      if (i + 1 >= args.size()) return invalidArgument(flag + " needs a value");
      v = args[++i];
    }
    if (flag == "--url") {
      o.url = v;
    } else if (flag == "--enroll-token-file") {
      o.enroll_token_file = v;
    } else if (flag == "--token-file") {
      o.token_file = v;
    } else if (flag == "--hosts") {
      o.hosts = v;
    } else if (flag == "--state-dir") {
      o.state_dir = v;
    } else if (flag == "--time-scale") {
      auto d = toDouble(flag, v);
      if (!d.ok()) return d.error();
      if (*d < 0) return invalidArgument("--time-scale must be >= 0");
      o.time_scale = *d;
    } else if (flag == "--duration-spread") {
      auto d = toDouble(flag, v);
      if (!d.ok()) return d.error();
      // Also refuses nan and inf, which std::stod reads.
      if (!(*d >= 0 && *d <= kMaxDurationSpread))
        return invalidArgument("--duration-spread must be within 0..2, got '" + v + "'");
      o.duration_spread = *d;
    } else if (flag == "--poll-wait") {
      auto n = toInt(flag, v, 0, 60);
      if (!n.ok()) return n.error();
      o.poll_wait_s = static_cast<int>(*n);
    } else if (flag == "--connections") {
      auto n = toInt(flag, v, 1, 19000);
      if (!n.ok()) return n.error();
      o.connections = static_cast<int>(*n);
    } else if (flag == "--running-poll-delay-ms") {
      auto n = toInt(flag, v, 0, 60000);
      if (!n.ok()) return n.error();
      o.running_poll_delay_ms = *n;
    } else if (flag == "--idle-poll") {
      auto n = toInt(flag, v, 1, 3600);
      if (!n.ok()) return n.error();
      o.idle_poll_s = static_cast<int>(*n);
    } else if (flag == "--fault-seed") {
      auto n = toInt(flag, v, 0, INT64_MAX);
      if (!n.ok()) return n.error();
      o.fault_seed = static_cast<std::uint64_t>(*n);
    } else if (flag == "--fault-rate") {
      auto d = toDouble(flag, v);
      if (!d.ok()) return d.error();
      if (*d < 0 || *d > 1) return invalidArgument("--fault-rate must be within 0..1");
      o.fault_rate = *d;
    } else if (flag == "--fault-kind") {
      auto f = parseFaultSpec(v);
      if (!f.ok()) return invalidArgument("--fault-kind: " + f.error().message);
      o.fault_kinds.push_back(*f);
    } else if (flag == "--fault") {
      auto colon = v.find(':');
      if (colon == std::string::npos || colon == 0)
        return invalidArgument("--fault needs HOST:KIND[:k=v,...], got '" + v + "'");
      auto f = parseFaultSpec(v.substr(colon + 1));
      if (!f.ok()) return invalidArgument("--fault: " + f.error().message);
      o.host_faults.emplace_back(v.substr(0, colon), *f);
    } else if (flag == "--max-hosts") {
      auto n = toInt(flag, v, 0, 10'000'000);
      if (!n.ok()) return n.error();
      o.max_hosts = static_cast<std::size_t>(*n);
    } else if (flag == "--status-interval") {
      auto n = toInt(flag, v, 0, 86400);
      if (!n.ok()) return n.error();
      o.status_interval_s = static_cast<int>(*n);
    } else if (flag == "--seed") {
      auto n = toInt(flag, v, 0, INT64_MAX);
      if (!n.ok()) return n.error();
      o.seed = static_cast<std::uint64_t>(*n);
    } else if (flag == "--ramp") {
      auto d = toDouble(flag, v);
      if (!d.ok()) return d.error();
      if (*d < 0) return invalidArgument("--ramp must be >= 0");
      o.ramp_s = *d;
    } else if (flag == "--control-file") {
      o.control_file = v;
    } else if (flag == "--log-level") {
      if (v != "debug" && v != "info" && v != "warn" && v != "error")
        return invalidArgument("--log-level must be debug, info, warn or error");
      o.log_level = v;
    } else {
      return invalidArgument("unknown flag " + flag);
    }
  }
  if (o.url.empty()) return invalidArgument("--url is required");
  if (o.enroll_token_file.empty()) return invalidArgument("--enroll-token-file is required");
  if (o.hosts.empty()) return invalidArgument("--hosts is required");
  auto sel = parseHostSelection(o.hosts);
  if (!sel.ok()) return sel.error();
  if (sel->file.empty() && o.token_file.empty())
    return invalidArgument("--hosts " + o.hosts + " lists hosts through the API: give --token-file");
  return o;
}

std::optional<sim::Platform> platformFromFleet(const std::string& name) {
  if (name == "san_miguel") return sim::Platform::kClemente;
  return sim::parsePlatform(name);
}

Result<HostSelection> parseHostSelection(const std::string& spec) {
  HostSelection sel;
  if (spec == "all") {
    sel.all = true;
  } else if (spec.rfind("pod:", 0) == 0) {
    for (const auto& p : split(spec.substr(4), ',')) {
      if (!trim(p).empty()) sel.pods.push_back(trim(p));
    }
    if (sel.pods.empty()) return invalidArgument("--hosts pod: names no pod");
  } else if (!spec.empty()) {
    sel.file = spec;
  } else {
    return invalidArgument("--hosts is empty");
  }
  return sel;
}

Result<std::vector<HostEntry>> parseHostFile(const std::string& text) {
  std::vector<HostEntry> out;
  int n = 0;
  for (const auto& raw : split(text, '\n')) {
    ++n;
    std::string line = raw.substr(0, raw.find('#'));
    std::istringstream in(line);
    HostEntry e;
    std::string platform, extra;
    if (!(in >> e.id)) continue;
    if (in >> platform) {
      auto p = platformFromFleet(platform);
      if (!p) return invalidArgument("line " + std::to_string(n) + ": unknown platform '" + platform + "'");
      e.platform = *p;
    }
    if (in >> extra) return invalidArgument("line " + std::to_string(n) + ": expected HOST [PLATFORM]");
    out.push_back(std::move(e));
  }
  return out;
}

Result<std::vector<HostEntry>> listHosts(const HostSelection& sel, const FetchJson& fetch,
                                         std::size_t max_hosts) {
  std::vector<HostEntry> out;
  std::vector<std::string> bases;
  if (sel.all) {
    bases.push_back("/api/v1/hosts?limit=500");
  } else {
    for (const auto& pod : sel.pods) bases.push_back("/api/v1/hosts?limit=500&pod=" + percentEncode(pod));
  }
  for (const auto& base : bases) {
    std::string cursor;
    size_t before = out.size();
    do {
      auto page = fetch(cursor.empty() ? base : base + "&cursor=" + percentEncode(cursor));
      if (!page.ok()) return page.error();
      if (!page->is_object() || !(*page)["items"].is_array())
        return invalidContent("GET /api/v1/hosts: no items in the answer");
      for (const auto& h : (*page)["items"]) {
        if (!h.is_object() || !h.contains("id") || !h["id"].is_string()) continue;
        HostEntry e;
        e.id = h["id"].get<std::string>();
        e.pod = h.value("pod", "");
        e.platform = platformFromFleet(h.value("platform", "")).value_or(sim::Platform::kCatalina);
        out.push_back(std::move(e));
        if (max_hosts > 0 && out.size() >= max_hosts) return out;
      }
      const auto& next = (*page)["next_cursor"];
      cursor = next.is_string() ? next.get<std::string>() : "";
    } while (!cursor.empty());
    if (!sel.all && out.size() == before) return notFound("pod has no hosts: " + base);
  }
  return out;
}

std::map<std::string, std::string> podVersions(const json& pod) {
  std::map<std::string, std::string> out;
  if (!pod.is_object() || !pod.contains("component_versions")) return out;
  const json& cv = pod["component_versions"];
  if (!cv.is_object()) return out;
  for (const auto& [kind, versions] : cv.items()) {
    if (!sim::isComponent(kind) || !versions.is_object()) continue;
    std::string best;
    std::int64_t best_n = -1;
    for (const auto& [version, n] : versions.items()) {
      const std::int64_t count = n.is_number_integer() ? n.get<std::int64_t>() : 0;
      if (count > best_n) {
        best = version;
        best_n = count;
      }
    }
    if (!best.empty()) out[kind] = best;
  }
  return out;
}

std::vector<sim::Fault> applyStartFaults(sim::HostState& state, const CliOptions& options) {
  std::vector<sim::Fault> added;
  const sim::PlatformSpec& spec = sim::platformSpec(state.platform);
  // Row remaps and Xids change the GPU state rather than staying in state.faults.
  auto present = [&](const sim::Fault& f) {
    const bool gpu_ok = f.gpu >= 0 && static_cast<size_t>(f.gpu) < state.gpus.size();
    if (f.kind == sim::FaultKind::kRowRemapPending) {
      return gpu_ok && state.gpus[static_cast<size_t>(f.gpu)].remap_pending;
    }
    if (f.kind == sim::FaultKind::kXid) {
      return std::any_of(state.xids.begin(), state.xids.end(), [&](const sim::XidEvent& x) {
        return x.gpu == f.gpu && x.xid == f.xid;
      });
    }
    return std::any_of(state.faults.begin(), state.faults.end(), [&](const sim::Fault& g) {
      return g.kind == f.kind && g.gpu == f.gpu && g.link == f.link && g.tool == f.tool;
    });
  };
  auto add = [&](const sim::Fault& f) {
    if (present(f)) return;
    sim::HostSim sim(state);
    if (sim.setFault(f).ok()) added.push_back(f);
  };
  for (const auto& templ : options.fault_kinds) {
    if (auto f = sim::seededFault(options.fault_seed, state.host, options.fault_rate, templ,
                                  spec.gpus, spec.links_per_gpu)) {
      add(*f);
    }
  }
  for (const auto& [host, templ] : options.host_faults) {
    if (host != state.host) continue;
    if (auto f = sim::seededFault(options.fault_seed, state.host, 1.0, templ, spec.gpus,
                                  spec.links_per_gpu)) {
      add(*f);
    }
  }
  return added;
}

Status applyControlLine(Fleet& fleet, const std::string& line) {
  std::istringstream in(line.substr(0, line.find('#')));
  std::string verb, host, spec, extra;
  if (!(in >> verb)) return okStatus();  // blank
  if (!(in >> host)) return invalidArgument("control: '" + line + "' names no host");
  in >> spec;
  if (in >> extra) return invalidArgument("control: too many words in '" + line + "'");
  const sim::HostState* state = fleet.hostState(host);
  if (!state) return notFound("control: no simulated host '" + host + "'");
  if (verb == "fault") {
    auto f = parseFaultSpec(spec);
    if (!f.ok()) return invalidArgument("control: " + f.error().message);
    const sim::PlatformSpec& ps = sim::platformSpec(state->platform);
    auto chosen = sim::seededFault(0, host, 1.0, *f, ps.gpus, ps.links_per_gpu);
    if (!chosen) return invalidArgument("control: cannot place fault " + spec);
    return fleet.injectFault(host, *chosen);
  }
  if (verb == "clear") {
    std::optional<sim::FaultKind> kind;
    if (!spec.empty()) {
      kind = sim::parseFaultKind(spec);
      if (!kind) return invalidArgument("control: unknown fault kind '" + spec + "'");
    }
    auto n = fleet.clearFaults(host, kind);
    if (!n.ok()) return n.error();
    return okStatus();
  }
  return invalidArgument("control: unknown verb '" + verb + "' (fault, clear)");
}

std::string statusLine(const StatusInputs& in) {
  const auto& a = in.now;
  const auto& b = in.before;
  const double dt = in.interval_s > 0 ? in.interval_s : 1;
  char buf[640];
  std::snprintf(
      buf, sizeof buf,
      "hosts %llu enrolled %llu rejected %llu | polling %llu (long %llu) polls/s %.1f errors %llu "
      "woken %llu | "
      "running %llu steps/s %.2f done %llu | reports ok %llu 409 %llu err %llu | "
      "poll p50 %.3fs p99 %.3fs quick p50 %.1fms p99 %.1fms req p50 %.1fms p99 %.1fms | "
      "conns %zu queued %zu | cpu %.1f%% rss %.0fMB",
      static_cast<unsigned long long>(a.hosts), static_cast<unsigned long long>(a.enrolled),
      static_cast<unsigned long long>(a.rejected),
      static_cast<unsigned long long>(a.polls_in_flight),
      static_cast<unsigned long long>(a.long_polls_in_flight), (a.polls - b.polls) / dt,
      static_cast<unsigned long long>(a.poll_errors),
      static_cast<unsigned long long>(a.sibling_wakeups), static_cast<unsigned long long>(a.running),
      (a.steps_done - b.steps_done) / dt, static_cast<unsigned long long>(a.steps_done),
      static_cast<unsigned long long>(a.reports_ok),
      static_cast<unsigned long long>(a.reports_conflict),
      static_cast<unsigned long long>(a.report_errors + a.reports_dropped), in.poll_p50,
      in.poll_p99, in.quick_p50 * 1000, in.quick_p99 * 1000, in.request_p50 * 1000,
      in.request_p99 * 1000, in.connections, in.queued, in.cpu_percent, in.rss_mb);
  return buf;
}

}  // namespace kiln::vfleet
