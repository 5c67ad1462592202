#include "agents/sim/jobsim/job_sim.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <sstream>

namespace kiln::jobsim {

using nlohmann::json;

// ---- command line

std::string usage() {
  return "usage: kiln-jobsim --url KILND_URL --token-file FILE --listen HOST:PORT [--hold SECONDS]\n"
         "                   [--allocate POD,... | --allocate-fraction F] [--seed N] [--log-level LEVEL]\n"
         "\n"
         "A simulated job scheduler for kilnd --scheduler-hook http://HOST:PORT/release.\n"
         "  --url               kilnd's base URL, e.g. http://127.0.0.1:8080\n"
         "  --token-file        a file holding an operator (or admin) API token\n"
         "  --listen            where kilnd's release requests arrive (any path)\n"
         "  --hold              seconds a job takes to checkpoint and leave once asked (default 20)\n"
         "  --allocate          run jobs on these pods: their available, non-spare hosts are allocated\n"
         "  --allocate-fraction run jobs on this fraction (0..1) of all pods, picked with --seed\n"
         "  --seed              seed of --allocate-fraction (default 1)\n"
         "  --log-level         trace, debug, info (default), warn, error\n";
}

namespace {

std::vector<std::string> splitList(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

std::optional<double> parseNumber(const std::string& s) {
  try {
    std::size_t used = 0;
    const double v = std::stod(s, &used);
    if (used != s.size() || !std::isfinite(v)) return std::nullopt;
    return v;
  } catch (...) {
    return std::nullopt;
  }
}

}  // namespace

Result<CliOptions> parseCli(const std::vector<std::string>& args) {
  CliOptions o;
  bool have_listen = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& flag = args[i];
    if (flag == "-h" || flag == "--help") return invalidArgument("help");
    if (i + 1 >= args.size()) return invalidArgument(flag + " needs a value (or is unknown)");
    const std::string& v = args[++i];
    if (flag == "--url") {
      o.url = v;
    } else if (flag == "--token-file") {
      o.token_file = v;
    } else if (flag == "--listen") {
      const auto colon = v.rfind(':');
      auto port = colon == std::string::npos ? std::nullopt : parseNumber(v.substr(colon + 1));
      if (colon == 0 || !port || *port < 1 || *port > 65535 || *port != std::floor(*port))
        return invalidArgument("--listen expects HOST:PORT, got '" + v + "'");
      o.listen_host = v.substr(0, colon);
      o.listen_port = static_cast<int>(*port);
      have_listen = true;
    } else if (flag == "--hold") {
      auto s = parseNumber(v);
      if (!s || *s < 0 || *s > 7 * 24 * 3600) return invalidArgument("--hold expects seconds >= 0, got '" + v + "'");
      o.hold = std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(*s * 1000)));
    } else if (flag == "--allocate") {
      o.allocate_pods = splitList(v);
      if (o.allocate_pods.empty()) return invalidArgument("--allocate expects POD[,POD...]");
    } else if (flag == "--allocate-fraction") {
      auto f = parseNumber(v);
      if (!f || *f < 0 || *f > 1) return invalidArgument("--allocate-fraction expects a number in [0, 1], got '" + v + "'");
      o.allocate_fraction = *f;
    } else if (flag == "--seed") {
      try {
        std::size_t used = 0;
        o.seed = std::stoull(v, &used);
        if (used != v.size()) throw std::invalid_argument(v);
      } catch (...) {
        return invalidArgument("--seed expects a whole number, got '" + v + "'");
      }
    } else if (flag == "--log-level") {
      static const std::set<std::string> kLevels = {"trace", "debug", "info", "warn", "error", "critical", "off"};
      if (!kLevels.count(v)) return invalidArgument("--log-level expects trace, debug, info, warn or error");
      o.log_level = v;
    } else {
      return invalidArgument("unknown flag " + flag);
    }
  }
  if (o.url.empty()) return invalidArgument("--url is required");
  if (o.token_file.empty()) return invalidArgument("--token-file is required");
  if (!have_listen) return invalidArgument("--listen is required");
  if (!o.allocate_pods.empty() && o.allocate_fraction)
    return invalidArgument("--allocate and --allocate-fraction exclude each other");
  return o;
}

std::vector<std::string> pickPods(std::vector<std::string> pods, double fraction, std::uint64_t seed) {
  std::sort(pods.begin(), pods.end());
  pods.erase(std::unique(pods.begin(), pods.end()), pods.end());
  if (fraction <= 0 || pods.empty()) return {};
  const auto n = pods.size();
  auto want = static_cast<std::size_t>(std::llround(fraction * static_cast<double>(n)));
  want = std::clamp<std::size_t>(want, 1, n);
  // mt19937_64's output is fixed by the standard, the distributions are not: draw indexes by
  // hand so a seed picks the same pods with any standard library.
  std::mt19937_64 rng(seed);
  for (std::size_t i = 0; i < want; ++i) std::swap(pods[i], pods[i + rng() % (n - i)]);
  pods.resize(want);
  std::sort(pods.begin(), pods.end());
  return pods;
}

// ---- kilnd documents

Result<HostView> parseHost(const json& doc) {
  if (!doc.is_object() || !doc.contains("id") || !doc["id"].is_string() || !doc.contains("state") ||
      !doc["state"].is_string())
    return invalidContent("a host document needs string fields id and state");
  HostView h;
  h.id = doc["id"].get<std::string>();
  h.state = doc["state"].get<std::string>();
  h.spare = doc.contains("spare") && doc["spare"].is_boolean() && doc["spare"].get<bool>();
  return h;
}

Result<std::vector<HostView>> parsePodHosts(const json& pod_doc) {
  if (!pod_doc.is_object() || !pod_doc.contains("hosts") || !pod_doc["hosts"].is_array())
    return invalidContent("a pod document needs a hosts array");
  std::vector<HostView> out;
  for (const auto& h : pod_doc["hosts"]) {
    auto host = parseHost(h);
    if (!host.ok()) return host.error();
    out.push_back(std::move(*host));
  }
  return out;
}

std::string jobName(const std::string& pod) { return "jobsim-" + pod; }

Result<AllocationSummary> startJobs(FleetApi& api, const std::vector<std::string>& pods, const LogFn& log) {
  AllocationSummary total;
  for (const auto& pod : pods) {
    auto hosts = api.podHosts(pod);
    if (!hosts.ok()) {
      if (hosts.error().code == ErrorCode::kUnavailable) return hosts.error();
      log("pod " + pod + ": no job started: " + hosts.error().message);
      ++total.failed;
      continue;
    }
    AllocationSummary s;
    const std::string reason = "job " + jobName(pod);
    for (const auto& h : *hosts) {
      if (h.spare) {
        ++s.spares;
      } else if (h.state != "available") {
        ++s.not_available;
      } else if (auto st = api.hostAction(h.id, "allocate", reason); st.ok()) {
        ++s.allocated;
      } else {
        if (st.error().code == ErrorCode::kUnavailable) return st.error();
        log("host " + h.id + ": allocate refused: " + st.error().message);
        ++s.failed;
      }
    }
    log("pod " + pod + ": job " + jobName(pod) + " started on " + std::to_string(s.allocated) + " hosts (" +
        std::to_string(s.spares) + " spares left out, " + std::to_string(s.not_available) + " not available" +
        (s.failed ? ", " + std::to_string(s.failed) + " refused" : std::string()) + ")");
    total.allocated += s.allocated;
    total.spares += s.spares;
    total.not_available += s.not_available;
    total.failed += s.failed;
  }
  return total;
}

// ---- release requests

Result<ReleaseRequest> parseReleaseRequest(const std::string& body) {
  const json doc = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return invalidArgument("the body is not JSON");
  if (!doc.is_object()) return invalidContent("expected a JSON object {action, rollout, pod, hosts}");
  if (!doc.contains("action") || doc["action"] != "release")
    return invalidContent("action must be \"release\"");
  if (!doc.contains("pod") || !doc["pod"].is_string() || doc["pod"].get<std::string>().empty())
    return invalidContent("pod is required (a non-empty string)");
  if (!doc.contains("hosts") || !doc["hosts"].is_array() || doc["hosts"].empty())
    return invalidContent("hosts is required (a non-empty array of host ids)");
  ReleaseRequest r;
  r.pod = doc["pod"].get<std::string>();
  if (doc.contains("rollout") && doc["rollout"].is_string()) r.rollout = doc["rollout"].get<std::string>();
  for (const auto& h : doc["hosts"]) {
    if (!h.is_string() || h.get<std::string>().empty()) return invalidContent("hosts must be non-empty strings");
    r.hosts.push_back(h.get<std::string>());
  }
  return r;
}

Scheduled ReleaseBook::schedule(const ReleaseRequest& request) {
  std::lock_guard lock(mu_);
  const auto now = clock_.now();
  auto [it, fresh] = by_pod_.try_emplace(request.pod);
  PendingRelease& p = it->second;
  if (fresh) {
    p.pod = request.pod;
    p.rollout = request.rollout;
    p.due = now + hold_;
  }
  p.hosts.insert(p.hosts.end(), request.hosts.begin(), request.hosts.end());
  std::sort(p.hosts.begin(), p.hosts.end());
  p.hosts.erase(std::unique(p.hosts.begin(), p.hosts.end()), p.hosts.end());
  Scheduled s;
  s.duplicate = !fresh;
  s.release_in = std::max(std::chrono::milliseconds(0), std::chrono::duration_cast<std::chrono::milliseconds>(p.due - now));
  return s;
}

namespace {
void byDue(std::vector<PendingRelease>& v) {
  std::stable_sort(v.begin(), v.end(), [](const PendingRelease& a, const PendingRelease& b) { return a.due < b.due; });
}
}  // namespace

std::vector<PendingRelease> ReleaseBook::takeDue() {
  std::lock_guard lock(mu_);
  const auto now = clock_.now();
  std::vector<PendingRelease> out;
  for (auto it = by_pod_.begin(); it != by_pod_.end();) {
    if (it->second.due <= now) {
      out.push_back(std::move(it->second));
      it = by_pod_.erase(it);
    } else {
      ++it;
    }
  }
  byDue(out);
  return out;
}

std::vector<PendingRelease> ReleaseBook::pending() const {
  std::lock_guard lock(mu_);
  std::vector<PendingRelease> out;
  for (const auto& [_, p] : by_pod_) out.push_back(p);
  byDue(out);
  return out;
}

namespace {

http::Response errorResponse(const Error& e) {
  http::Response r;
  r.status = httpStatus(e.code);
  r.body = json{{"error", {{"code", errorCodeName(e.code)}, {"message", e.message}, {"details", json::object()}}}}.dump();
  return r;
}

std::string seconds(std::chrono::milliseconds ms) {
  std::ostringstream s;
  s << static_cast<double>(ms.count()) / 1000.0 << " s";
  return s.str();
}

}  // namespace

http::Response answerHook(ReleaseBook& book, const std::string& method, const std::string& body, const LogFn& log) {
  if (method != "POST") {
    log("refused a " + method + " request: only POST {\"action\": \"release\", ...} is served");
    auto r = errorResponse(Error(ErrorCode::kMethodNotAllowed, "only POST is served"));
    r.headers.emplace_back("Allow", "POST");
    return r;
  }
  auto req = parseReleaseRequest(body);
  if (!req.ok()) {
    log("refused a release request: " + req.error().message);
    return errorResponse(req.error());
  }
  const Scheduled s = book.schedule(*req);
  const std::string who = req->rollout.empty() ? std::string() : " (rollout " + req->rollout + ")";
  if (s.duplicate)
    log("pod " + req->pod + ": release asked again" + who + ": already due in " + seconds(s.release_in) +
        ", nothing new scheduled");
  else
    log("pod " + req->pod + ": release of " + std::to_string(req->hosts.size()) + " hosts asked" + who + ": job " +
        jobName(req->pod) + " checkpoints, release in " + seconds(s.release_in));
  http::Response r;
  r.status = 202;
  r.body = json{{"accepted", true},
                {"pod", req->pod},
                {"release_in_s", static_cast<double>(s.release_in.count()) / 1000.0},
                {"duplicate", s.duplicate}}
               .dump();
  return r;
}

int releaseHosts(FleetApi& api, const PendingRelease& release, const LogFn& log) {
  int released = 0;
  std::string skipped;
  const std::string reason = "job " + jobName(release.pod) + " checkpointed and left" +
                             (release.rollout.empty() ? std::string() : " for rollout " + release.rollout);
  for (const auto& id : release.hosts) {
    auto h = api.host(id);
    if (!h.ok()) {
      log("host " + id + ": not released: " + h.error().message);
      continue;
    }
    if (h->state != "allocated") {
      skipped += (skipped.empty() ? "" : ", ") + id + " (" + h->state + ")";
      continue;
    }
    if (auto st = api.hostAction(id, "release", reason); !st.ok()) {
      log("host " + id + ": release failed: " + st.error().message);
      continue;
    }
    ++released;
  }
  log("pod " + release.pod + ": " + reason + ": released " + std::to_string(released) + " of " +
      std::to_string(release.hosts.size()) + " hosts" +
      (skipped.empty() ? std::string() : "; no longer allocated: " + skipped));
  return released;
}

}  // namespace kiln::jobsim
