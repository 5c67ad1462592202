// kiln-vfleet: composition root of the virtual fleet (agents/sim/fleet/fleet.h). Reads flags,
// lists the hosts, builds the simulated hosts, and runs everything on one io_context thread.

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <ctime>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include "agents/sim/fleet/asio_loop.h"
#include "agents/sim/fleet/fleet.h"
#include "agents/sim/fleet/fleet_cli.h"
#include "agents/sim/fleet/http_pool.h"

namespace {

using namespace kiln::vfleet;
namespace sim = kiln::sim;

std::optional<std::string> readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

std::optional<std::string> readSecret(const std::string& path) {
  auto text = readFile(path);
  if (!text) return std::nullopt;
  const auto b = text->find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return std::nullopt;
  return text->substr(b, text->find_last_not_of(" \t\r\n") - b + 1);
}

std::string nowTimestamp() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::localtime_r(&now, &tm);
  char ts[64] = {};
  std::strftime(ts, sizeof ts, "%a %b %e %H:%M:%S %Y", &tm);
  return ts;
}

double cpuSeconds() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

double rssMb() {
  std::ifstream in("/proc/self/statm");
  long pages = 0, resident = 0;
  in >> pages >> resident;
  return static_cast<double>(resident) * static_cast<double>(::sysconf(_SC_PAGESIZE)) / 1048576.0;
}

// Runs the io_context until one request is answered (start-up only: the fleet is not running).
kiln::Result<HttpResponse> requestNow(boost::asio::io_context& io, HttpPool& pool, HttpRequest req) {
  std::optional<kiln::Result<HttpResponse>> out;
  pool.send(std::move(req), [&](kiln::Result<HttpResponse> r) { out = std::move(r); });
  io.restart();
  while (!out && io.run_one() > 0) {
  }
  if (!out) return kiln::unavailable("no answer");
  return std::move(*out);
}

int run(const CliOptions& opt, std::shared_ptr<spdlog::logger> logger) {
  auto enroll = readSecret(opt.enroll_token_file);
  if (!enroll) {
    logger->error("cannot read the enrolment token from {}", opt.enroll_token_file);
    return 2;
  }
  std::string token;
  if (!opt.token_file.empty()) {
    auto t = readSecret(opt.token_file);
    if (!t) {
      logger->error("cannot read the API token from {}", opt.token_file);
      return 2;
    }
    token = *t;
  }
  auto hostport = parseHttpUrl(opt.url);
  if (!hostport.ok()) {
    logger->error("{}", hostport.error().message);
    return 2;
  }
  boost::asio::io_context io(1);
  AsioLoop loop(io);
  auto pool = HttpPool::create(io, {hostport->first, hostport->second, opt.connections});
  if (!pool.ok()) {
    logger->error("{}", pool.error().message);
    return 1;
  }
  FetchJson fetch = [&](const std::string& target) -> kiln::Result<nlohmann::json> {
    auto r = requestNow(io, **pool, HttpRequest{"GET", target, token});
    if (!r.ok()) return r.error();
    if (r->status != 200)
      return kiln::unavailable("GET " + target + ": HTTP " + std::to_string(r->status) + " " + r->body);
    auto j = nlohmann::json::parse(r->body, nullptr, false);
    if (j.is_discarded()) return kiln::invalidContent("GET " + target + ": not JSON");
    return j;
  };

  // ---- the hosts
  auto sel = parseHostSelection(opt.hosts);
  std::vector<HostEntry> hosts;
  if (!sel->file.empty()) {
    auto text = readFile(sel->file);
    if (!text) {
      logger->error("cannot read the host file {}", sel->file);
      return 2;
    }
    auto parsed = parseHostFile(*text);
    if (!parsed.ok()) {
      logger->error("{}: {}", sel->file, parsed.error().message);
      return 2;
    }
    hosts = std::move(*parsed);
    if (opt.max_hosts > 0 && hosts.size() > opt.max_hosts) hosts.resize(opt.max_hosts);
  } else {
    auto listed = listHosts(*sel, fetch, opt.max_hosts);
    if (!listed.ok()) {
      logger->error("listing hosts: {}", listed.error().message);
      return 1;
    }
    hosts = std::move(*listed);
  }
  if (hosts.empty()) {
    logger->error("no hosts selected by --hosts {}", opt.hosts);
    return 1;
  }

  std::unique_ptr<HostStore> store;
  if (opt.state_dir.empty()) {
    store = std::make_unique<MemoryHostStore>();
  } else {
    store = std::make_unique<DirHostStore>(opt.state_dir);
  }

  std::map<std::string, std::map<std::string, std::string>> pod_versions;
  FleetSettings settings;
  settings.poll.poll_wait_s = opt.poll_wait_s;
  // A quarter of the connections stay free for reports, enrolments and short polls.
  settings.poll.long_poll_slots = std::max(1, opt.connections - std::max(1, opt.connections / 4));
  settings.poll.idle_interval = std::chrono::seconds(opt.idle_poll_s);
  settings.running_poll_delay = std::chrono::milliseconds(opt.running_poll_delay_ms);
  settings.time_scale = opt.time_scale;
  settings.duration_spread = opt.duration_spread;
  const double ramp_s = opt.ramp_s.value_or(std::min(30.0, static_cast<double>(hosts.size()) / 500.0));
  settings.ramp = std::chrono::milliseconds(static_cast<std::int64_t>(ramp_s * 1000));
  settings.enroll_token = *enroll;
  settings.seed = opt.seed.value_or(std::random_device{}());
  settings.timestamp = nowTimestamp;
  settings.read_file = readFile;
  auto sink = [logger](LogLevel level, const std::string& msg) {
    switch (level) {
      case LogLevel::kDebug: logger->debug("{}", msg); break;
      case LogLevel::kInfo: logger->info("{}", msg); break;
      case LogLevel::kWarn: logger->warn("{}", msg); break;
      case LogLevel::kError: logger->error("{}", msg); break;
    }
  };
  Fleet fleet(loop, **pool, *store, settings, sink);
  std::size_t faulty = 0, reloaded = 0;
  for (const auto& e : hosts) {
    sim::HostState state;
    if (auto saved = store->loadState(e.id)) {
      state = std::move(*saved);
      reloaded++;
    } else {
      state = sim::makeDefaultState(e.id, e.platform);
      if (opt.adopt_versions && !token.empty() && !e.pod.empty()) {
        auto it = pod_versions.find(e.pod);
        if (it == pod_versions.end()) {
          auto pod = fetch("/api/v1/pods/" + percentEncode(e.pod));
          it = pod_versions.emplace(e.pod, pod.ok() ? podVersions(*pod) : std::map<std::string, std::string>{}).first;
        }
        for (const auto& [k, v] : it->second) state.versions[k] = v;
      }
    }
    auto added = applyStartFaults(state, opt);
    for (const auto& f : added) logger->info("fault on {}: {}", e.id, sim::toJson(f).dump());
    if (!added.empty()) faulty++;
    fleet.addHost(std::move(state), e.pod);
  }
  logger->info("virtual fleet: {} hosts ({} reloaded from {}), {} with start-up faults, "
               "{} connections, time scale {}, duration spread {}, seed {}, url {}",
               hosts.size(), reloaded, opt.state_dir.empty() ? "-" : opt.state_dir, faulty,
               opt.connections, opt.time_scale, opt.duration_spread, settings.seed, opt.url);

  // ---- run
  io.restart();
  fleet.start();
  bool stopping = false;
  boost::asio::signal_set signals(io, SIGTERM, SIGINT);
  signals.async_wait([&](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    logger->info("signal {}: stopping", sig);
    stopping = true;
    fleet.stop(std::chrono::seconds(5), [&] {
      (*pool)->shutdown();
      io.stop();
    });
  });

  // Status line.
  FleetCounters before = fleet.counters();
  double cpu_before = cpuSeconds();
  auto wall_before = SteadyClock::now();
  std::function<void()> status = [&] {
    const auto now = SteadyClock::now();
    const double dt = std::chrono::duration<double>(now - wall_before).count();
    const double cpu = cpuSeconds();
    StatusInputs in;
    in.now = fleet.counters();
    in.before = before;
    in.interval_s = dt;
    in.poll_p50 = fleet.pollLatency().quantileSeconds(0.5);
    in.poll_p99 = fleet.pollLatency().quantileSeconds(0.99);
    in.quick_p50 = fleet.quickPollLatency().quantileSeconds(0.5);
    in.quick_p99 = fleet.quickPollLatency().quantileSeconds(0.99);
    in.request_p50 = fleet.requestLatency().quantileSeconds(0.5);
    in.request_p99 = fleet.requestLatency().quantileSeconds(0.99);
    const auto ps = (*pool)->stats();
    in.connections = ps.open;
    in.queued = ps.queued;
    in.cpu_percent = dt > 0 ? 100.0 * (cpu - cpu_before) / dt : 0;
    in.rss_mb = rssMb();
    logger->info("{}", statusLine(in));
    fleet.pollLatency().reset();
    fleet.quickPollLatency().reset();
    fleet.requestLatency().reset();
    before = in.now;
    cpu_before = cpu;
    wall_before = now;
    if (!stopping) loop.after(std::chrono::seconds(opt.status_interval_s), status);
  };
  if (opt.status_interval_s > 0) loop.after(std::chrono::seconds(opt.status_interval_s), status);

  // Control file: new lines are applied as they are appended.
  std::size_t control_lines = 0;
  std::function<void()> control = [&] {
    if (auto text = readFile(opt.control_file)) {
      std::istringstream in(*text);
      std::string line;
      std::size_t n = 0;
      while (std::getline(in, line)) {
        if (++n <= control_lines) continue;
        control_lines = n;
        auto st = applyControlLine(fleet, line);
        if (st.ok()) {
          if (line.find_first_not_of(" \t") != std::string::npos) logger->info("control: {}", line);
        } else {
          logger->warn("{}", st.error().message);
        }
      }
    }
    if (!stopping) loop.after(std::chrono::seconds(2), control);
  };
  if (!opt.control_file.empty()) {
    // Lines already there at start are applied too.
    control();
  }

  io.run();
  logger->info("stopped: {} enrolled, {} steps done, {} reports ok, {} stale (409)",
               fleet.counters().enrolled, fleet.counters().steps_done, fleet.counters().reports_ok,
               fleet.counters().reports_conflict);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  auto opt = parseCli(args);
  if (!opt.ok()) {
    if (opt.error().message == "help") {
      std::cout << usage();
      return 0;
    }
    std::cerr << "kiln-vfleet: " << opt.error().message << "\n" << usage();
    return 2;
  }
  auto logger = std::make_shared<spdlog::logger>(
      "kiln-vfleet", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  logger->set_level(spdlog::level::from_str(opt->log_level));
  logger->flush_on(spdlog::level::info);
  try {
    return run(*opt, logger);
  } catch (const std::exception& e) {
    logger->error("internal error: {}", e.what());
    return 70;
  }
}
