// kilnd: the composition root. Reads settings, applies migrations, wires the store, API and
// HTTP server, and waits for SIGTERM/SIGINT.

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <csignal>
#include <mutex>
#include <thread>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "common/exec/gpgv.h"
#include "common/exec/process_runner.h"
#include "common/executable_allowlist.h"
#include "common/executor.h"
#include "common/spd_log.h"
#include "orchestrator/api/api.h"
#include "orchestrator/db/migrations.h"
#include "orchestrator/db/pg_drain_ledger.h"
#include "orchestrator/db/pg_leader.h"
#include "orchestrator/db/pg_live_output.h"
#include "orchestrator/db/pg_notify.h"
#include "orchestrator/db/pg_reliability_store.h"
#include "orchestrator/db/pg_retention_store.h"
#include "orchestrator/db/pg_rollout_store.h"
#include "orchestrator/db/pg_run_store.h"
#include "orchestrator/db/pg_store.h"
#include "orchestrator/fleet/fleet_service.h"
#include "orchestrator/http/client.h"
#include "orchestrator/http/server.h"
#include "orchestrator/kilnd/config.h"
#include "orchestrator/kilnd/controller_loop.h"
#include "orchestrator/kilnd/scheduler_hook.h"
#include "orchestrator/retention/sweeper.h"
#include "orchestrator/rollouts/rollout_service.h"
#include "orchestrator/runs/agent_gateway.h"
#include "orchestrator/runs/runs_room.h"
#include "orchestrator/scheduler/hook_driver.h"
#include "orchestrator/scheduler/run_gate.h"
#include "orchestrator/scheduler/slurm_driver.h"

extern char** environ;

namespace {

using namespace kiln;

std::map<std::string, std::string> environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

Result<std::string> readFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return notFound("cannot open " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Creates the first admin token when the database has none, and writes it to `path` (0600).
Status bootstrapAdminToken(core::Store& store, const std::string& path, Logger& log) {
  auto has = store.hasAdminToken();
  if (!has.ok()) return has.error();
  if (*has) return Ok{};
  if (path.empty()) {
    log.warn("the database has no admin token: start kilnd with --admin-token-file FILE to create one");
    return Ok{};
  }
  auto token = store.createToken(core::Role::kAdmin, "bootstrap admin", "", {"kilnd", "kilnd"});
  if (!token.ok()) return token.error();
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return internalError("cannot write " + tmp + ": " + std::strerror(errno));
  const std::string text = token->secret + "\n";
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) return internalError("cannot write " + path);
  log.info("created the first admin token ({}) in {}", token->info.id, path);
  return Ok{};
}

// The controller loop's lock: PostgreSQL's advisory lock (one replica leads).
class DbLeadership final : public kilnd::Leadership {
 public:
  explicit DbLeadership(std::string url) : lock_(std::move(url)) {}
  bool tryHold() override { return lock_.tryHold(); }

 private:
  db::LeaderLock lock_;
};

// Raises the soft limit on open files to the hard one; returns the limit now in force.
long raiseDescriptorLimit() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return 1024;
  if (rl.rlim_cur < rl.rlim_max) {
    rlimit raised = rl;
    raised.rlim_cur = rl.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) rl = raised;
  }
  return rl.rlim_cur == RLIM_INFINITY ? 1L << 20 : static_cast<long>(rl.rlim_cur);
}

// The job scheduler's driver that --scheduler names (none: null), with what it owns.
struct SchedulerParts {
  std::unique_ptr<scheduler::DrainLedger> drain_ledger;
  std::unique_ptr<scheduler::SlurmControl> slurm_control;
  std::unique_ptr<scheduler::Driver> driver;  // last: destroyed first
};

Result<SchedulerParts> makeScheduler(const kilnd::Config& config, core::Store& store, core::HostMoves& moves,
                                     reliability::ReliabilityStore* interruptions, core::Clock& clock,
                                     Executor& hook_executor, const std::shared_ptr<Logger>& log) {
  SchedulerParts parts;
  if (config.scheduler == "slurm") {
    auto naming = scheduler::NodeNaming::make(config.slurm_node_name, config.slurm_nodes);
    if (!naming.ok()) return naming.error();
    scheduler::ScontrolOptions so;
    const std::string dir = config.slurm_bin_dir.empty() ? "" : config.slurm_bin_dir + "/";
    so.scontrol = dir + "scontrol";
    so.sinfo = dir + "sinfo";
    so.squeue = dir + "squeue";
    so.timeout = std::chrono::seconds(config.slurm_timeout_s);
    so.env = exec::allowListedEnvironment(environ, {"PATH", "LANG", "LC_ALL", "TZ", "SLURM_CONF", "HOME"}, {});
    parts.drain_ledger = db::makePgDrainLedger({config.database_url, 2});
    parts.slurm_control = scheduler::makeScontrol(so, exec::makeBoostProcessRunner());
    scheduler::SlurmDriverOptions dopt;
    dopt.naming = *naming;
    dopt.policy = config.slurm_on_jobs == "requeue" ? scheduler::JobPolicy::kRequeue : scheduler::JobPolicy::kWait;
    dopt.interval = std::chrono::seconds(config.slurm_interval_s);
    // The driver's host moves (Slurm took or gave back a node) go through the fleet service.
    parts.driver = std::make_unique<scheduler::SlurmDriver>(store, moves, store, *parts.drain_ledger,
                                                            *parts.slurm_control, interruptions, clock, dopt, *log);
    log->info("slurm (nodes named '{}', {} explicit; a pass every {} s; jobs on drained nodes: {})",
              config.slurm_node_name, config.slurm_nodes.size(), config.slurm_interval_s, config.slurm_on_jobs);
  } else if (config.scheduler == "hook") {
    parts.driver = std::make_unique<scheduler::HookDriver>(hook_executor, kilnd::releaseCall(config.scheduler_hook, log));
    log->info("hook {}", config.scheduler_hook);
  }
  return parts;
}

// The workflow catalogue at start: the executable allow-list first (what any workflow may
// run), then the workflow directory by the file-load rule (a version put through the API
// survives the restart: WorkflowCatalog::loadWorkflowDir). False: kilnd must not start.
bool setUpWorkflows(const kilnd::Config& config, runs::WorkflowCatalog& workflows, Logger& log) {
  if (!config.workflow_executables.empty()) {
    auto list = loadExecutableAllowList(config.workflow_executables);
    if (!list.ok()) {
      log.error("--workflow-executables: {}", list.error().message);
      return false;
    }
    log.info("workflow steps may run {} executables ({})", list->entries.size(), config.workflow_executables);
    workflows.restrictExecutables(std::move(*list));
  }
  if (config.workflows_dir.empty()) return true;
  auto loaded = workflows.loadWorkflowDir(config.workflows_dir, {"kilnd", "kilnd"}, log);
  if (!loaded.ok()) {
    log.error("workflows in {} are invalid:\n{}", config.workflows_dir,
              loaded.error().details.count("text") ? loaded.error().details.at("text") : loaded.error().message);
    return false;
  }
  log.info("workflows loaded from {}: {}", config.workflows_dir, loaded->size());
  return true;
}

// The check of bundles' signatures (--trusted-keys, issue 31): gpgv against that keyring, its
// path made absolute now. Empty without the flag. An error when the file cannot be read: a
// site that asked for signatures must not run without them.
Result<SignatureCheck> bundleSignatureCheck(const kilnd::Config& config, exec::ProcessRunner& runner) {
  if (config.trusted_keys.empty()) return SignatureCheck();
  std::error_code ec;
  const std::filesystem::path keys = std::filesystem::absolute(config.trusted_keys, ec);
  if (ec || !std::filesystem::is_regular_file(keys, ec) || ::access(keys.c_str(), R_OK) != 0)
    return invalidArgument("--trusted-keys " + config.trusted_keys + ": not a readable file");
  return exec::gpgvCheck(runner, keys.string());
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  auto config = kilnd::parseConfig(args, environment(), readFile);
  if (!config.ok()) {
    if (config.error().message == "help") {
      std::cout << kilnd::usage();
      return 0;
    }
    std::cerr << "kilnd: " << config.error().message << "\n" << kilnd::usage();
    return 2;
  }
  // One logger, a named one per component (common/spd_log.h): "[scheduler] ..." in the text format,
  // "logger": "kilnd.scheduler" in JSON.
  auto spd = spdlog::stdout_color_mt("kilnd");
  spd->set_level(spdlog::level::from_str(config->log_level));
  if (auto st = setLogFormat(*spd, config->log_format); !st.ok()) {
    std::cerr << "kilnd: " << st.error().message << "\n";
    return 2;
  }
  const std::shared_ptr<Logger> log = makeSpdLogger(spd);
  const auto controller_log = log->named("controller"), rollouts_log = log->named("rollouts"),
             gateway_log = log->named("agents"), fleet_log = log->named("fleet"),
             scheduler_log = log->named("scheduler"), notify_log = log->named("notify");

  // Block the stop signals in every thread; main waits for them with sigwait.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  // gpgv's runner outlives the rollout service, whose bundle uploads call it.
  const std::unique_ptr<exec::ProcessRunner> gpgv_runner = exec::makeBoostProcessRunner();
  auto verify_bundles = bundleSignatureCheck(*config, *gpgv_runner);
  if (!verify_bundles.ok()) {
    log->error("{}", verify_bundles.error().message);
    return 2;
  }
  if (*verify_bundles) log->info("bundles must be signed by a key of {}", config->trusted_keys);

  auto migrated = db::applyMigrations(config->database_url);
  if (!migrated.ok()) {
    log->error("cannot prepare the database: {}", migrated.error().message);
    return 1;
  }
  for (const auto& m : migrated->applied) log->info("applied migration {}", m);
  log->info("database schema version {}", migrated->to_version);

  auto store = db::makePgStore({config->database_url, config->db_pool});
  if (auto st = bootstrapAdminToken(*store, config->admin_token_file, *log); !st.ok()) {
    log->error("{}", st.error().message);
    return 1;
  }

  // The controller loop (controller_loop.h) turns every 200 ms, and at once when agents'
  // reports finish a run (a rollout's pod then moves on without waiting for the next pass).
  // Declared before the executor so that it outlives the executor's threads, which wake it.
  core::SystemClock clock;
  DbLeadership leadership(config->database_url);
  std::vector<kilnd::ControllerPass> passes;
  kilnd::ControllerLoopOptions loop_options;
  std::unique_ptr<kilnd::ControllerLoop> controller_loop;
  auto wakeController = [&] {
    if (controller_loop) controller_loop->wake();
  };
  http::initializeNetworkThreads(config->network_threads);
  Executor executor(config->threads);
  auto run_store = db::makePgRunStore({config->database_url, config->db_pool});
  // Running steps' live output (issue 18): small, one primary-key read or write per call.
  auto live_output = db::makePgLiveOutputStore({config->database_url, 2});
  // The run service tells of new work through the relay, which the gateway joins once it
  // exists (runs/agent_work.h); the gateway asks the run service for work as its AgentWork.
  runs::WorkRelay work_relay;
  runs::RunServiceOptions run_options;
  run_options.on_run_complete = wakeController;
  run_options.lease_grace_ms = config->lease_grace_s * 1000LL;
  run_options.unreachable_after = std::chrono::seconds(config->unreachable_after_s);
  // Other replicas learn at once (LISTEN/NOTIFY) that a host has work, or that a token was
  // revoked: their parked polls wake and their token caches drop it (pg_notify.h). Started once
  // the gateway and the API exist; stopped before them.
  std::atomic<bool> revoked_now{false};
  db::PgNotifier notifier(
      config->database_url,
      [&](const std::string& channel, const std::string& payload) {
        if (channel == "kiln_work") work_relay.notify(payload);
        if (channel == "kiln_tokens") revoked_now = true;
      },
      [&] { revoked_now = true; },
      *notify_log);
  runs::RunsRoom runs_room(*store, *run_store, clock, run_options, [&work_relay, &notifier](const std::string& host) {
    work_relay.notify(host);
    notifier.publishWork(host);
  });
  runs::RunService& run_service = runs_room.runs;
  runs::AgentGatewayOptions gateway_options;
  gateway_options.by_priority = config->report_priority;
  runs::AgentGateway gateway(runs_room.agent_work, *run_store, executor, clock, *gateway_log, gateway_options);
  work_relay.attach(&gateway);
  if (!setUpWorkflows(*config, runs_room.workflows, *log)) return 1;
  gateway.start();

  auto rollout_store = db::makePgRolloutStore({config->database_url, 4});
  auto reliability_store = db::makePgReliabilityStore({config->database_url, 2});
  rollouts::ControllerOptions rollout_options;
  rollout_options.log = rollouts_log.get();
  rollout_options.reconcile_threads = config->controller_threads;

  // Every host move kilnd makes outside a run's verdict goes through the fleet service, which
  // applies what follows it (quarantine validation after a repair, the scheduler's drain or
  // resume): REST host actions, the scheduler driver and the rollout controller alike.
  fleet::FleetService fleet_service(*store, &run_service, *fleet_log);

  // The job scheduler's driver (scheduler/driver.h), one of:
  //   --scheduler slurm: the Slurm driver (its own thread, leader only) drains a host's node
  //     before a rollout works on it, resumes the nodes it drained, and feeds allocations and
  //     interruptions back;
  //   --scheduler-hook URL|PATH: the hook's calls (an HTTP POST with a 3 s timeout, or a
  //     command with 10 s) on their own two threads, never in the controller pass; the
  //     scheduler answers later with POST /hosts/{id}/actions {"action": "release"}.
  // The rollout controller asks it without waiting: requestDrain (the release ask) and heldBack
  // (the drain gate). The hook's executor is declared before the driver and the rollout
  // service: its destructor finishes the calls in flight.
  std::atomic<bool> leading{false};
  Executor hook_executor(2);
  auto scheduler_parts = makeScheduler(*config, *store, fleet_service, reliability_store.get(), clock, hook_executor,
                                       scheduler_log);
  if (!scheduler_parts.ok()) {
    log->error("{}", scheduler_parts.error().message);
    return 2;
  }
  const std::unique_ptr<scheduler::Driver>& scheduler_driver = scheduler_parts->driver;
  fleet_service.setScheduler(scheduler_driver.get());
  rollout_options.scheduler = scheduler_driver.get();
  // Burn-in, quarantine, maintenance and manual runs start a host only once the scheduler's
  // drain gate opens (runs/drain_gate.h, scheduler/run_gate.h); with no driver, no gate.
  if (scheduler_driver)
    runs_room.setDrainGate(
        [driver = scheduler_driver.get()](const core::HostSummary& h, const std::string& run) {
          return scheduler::runHeldBack(*driver, h, run);
        },
        *store);
  std::thread scheduler_thread;
  if (scheduler_driver) scheduler_thread = std::thread([&] { scheduler_driver->run([&] { return leading.load(); }); });
  rollouts::RolloutService rollout_service(*store, *rollout_store, run_service, clock,
                                           {rollouts_log.get(), *verify_bundles});
  rollouts::RolloutController rollout_controller(fleet_service, *rollout_store, run_service, clock, rollout_options);
  reliability::ReliabilityService reliability_service(*reliability_store, clock,
                                                      reliability::ReliabilityTargets{config->reliability_target});

  // The controller: exactly one replica (the holder of the leader lock) drives timers, leases,
  // run verdicts and rollouts.
  std::atomic<bool> stopping{false};
  api::ControllerMetrics controller_metrics;
  passes.push_back({"runs", [&] { return runs_room.timers.tick(); }});
  passes.push_back({"rollouts", [&] { return rollout_controller.tick(); }});
  loop_options.on_leadership = [&](bool is_leader) {
    controller_metrics.setLeader(is_leader);
    leading = is_leader;
    if (is_leader && scheduler_driver) scheduler_driver->wake();
  };
  loop_options.on_round = [&](bool ok, double seconds, double wall) { controller_metrics.passDone(ok, seconds, wall); };
  controller_loop = std::make_unique<kilnd::ControllerLoop>(leadership, std::move(passes), clock, *controller_log, loop_options);
  controller_metrics.setLeader(false);
  std::thread controller([&] { controller_loop->run(); });

  // Retention (issue 33): the leader sweeps what is old enough, in small batches on this thread
  // of its own (never in the controller's passes, never on the report path).
  auto retention_store = db::makePgRetentionStore({config->database_url, 1});
  std::unique_ptr<retention::FileAuditExport> audit_export;
  if (!config->audit_export_dir.empty())
    audit_export = std::make_unique<retention::FileAuditExport>(config->audit_export_dir, clock);
  auto retention_log = log->named("retention");
  retention::Sweeper sweeper(*retention_store, audit_export.get(), *retention::parsePolicy(config->retention), clock,
                             *retention_log);
  log->info(
      "retention: {}{}", config->retention_interval_s > 0 ? retention::describe(sweeper.policy()) : "off",
      audit_export ? ", audit exported to " + config->audit_export_dir : " (audit kept whole: no --audit-export-dir)");
  std::mutex retention_mu;
  std::condition_variable retention_cv;
  std::thread retention_thread([&] {
    if (config->retention_interval_s <= 0) return;
    // The first sweep a minute after start (not in the middle of a restart's catch-up), then
    // every interval, only while this replica leads.
    auto wait = std::chrono::seconds(std::min(60, config->retention_interval_s));
    for (;;) {
      std::unique_lock lock(retention_mu);
      if (retention_cv.wait_for(lock, wait, [&] { return stopping.load(); })) return;
      lock.unlock();
      wait = std::chrono::seconds(config->retention_interval_s);
      if (controller_loop->leading()) sweeper.sweep();
    }
  });

  api::Services services;
  services.store = store.get();
  services.clock = &clock;
  services.runs = &run_service;
  services.workflows = &runs_room.workflows;
  services.agent_work = &runs_room.agent_work;
  services.agent_link = run_store.get();
  services.agents = &gateway;
  services.live_output = live_output.get();
  services.rollouts = &rollout_service;
  services.reliability = &reliability_service;
  services.scheduler = scheduler_driver.get();
  services.fleet = &fleet_service;
  services.targets = {config->reliability_target, config->pod_p90_target_s};
  services.controller = &controller_metrics;
  services.retention = &sweeper;
  services.options.web_root = config->web_root;
  services.options.agent_token_ttl = std::chrono::seconds(config->agent_token_ttl_s);
  services.options.agent_client_certs = !config->agent_client_ca.empty();
  services.options.min_agent_version = config->min_agent_version;
  api::Api api(services, executor, log->named("api"));
  notifier.start();

  // Revocations made by other replicas (and by agent re-enrolment) reach this one's token cache:
  // at once when the database announces one (kiln_tokens), else at least every second.
  std::thread revocations([&] {
    while (!stopping) {
      revoked_now = false;
      api.followRevocations();
      for (int i = 0; i < 20 && !stopping && !revoked_now; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });

  http::ServerOptions server_options;
  server_options.host = config->host();
  server_options.port = config->port();
  server_options.tls_cert_file = config->tls_cert;
  server_options.tls_key_file = config->tls_key;
  server_options.client_ca_file = config->agent_client_ca;
  server_options.threads = config->network_threads;
  // Every parked long poll holds a connection: take what the descriptor limit allows (the
  // systemd unit sets 1M; docs/DEPENDENCIES.md: 20,000 on the development machines), less room for
  // PostgreSQL connections, logs and the console's files.
  const long descriptors = raiseDescriptorLimit();
  server_options.max_connections = static_cast<int>(std::clamp(descriptors - 1000, 64L, 4000000L));
  server_options.max_in_flight = static_cast<int>(std::clamp(descriptors - 2000, 32L, 4000000L));
  auto server = http::makeServer(server_options, api);
  if (auto st = server->start(); !st.ok()) {
    log->error("{}", st.error().message);
    stopping = true;  // a joinable thread must not be destroyed
    controller_loop->stop();
    if (scheduler_driver) {
      scheduler_driver->stop();
      scheduler_thread.join();
    }
    notifier.stop();
    controller.join();
    revocations.join();
    retention_cv.notify_all();
    retention_thread.join();
    gateway.stop();
    return 1;
  }
  log->info("kilnd serving {}://{} (at most {} connections)", config->tls_cert.empty() ? "http" : "https", config->listen,
            server_options.max_connections);

  int sig = 0;
  sigwait(&stop_signals, &sig);
  log->info("signal {}: finishing requests in flight", sig);
  gateway.stop();
  server->stop(5000);
  stopping = true;
  controller_loop->stop();
  controller.join();
  revocations.join();
  {
    std::lock_guard lock(retention_mu);
    retention_cv.notify_all();
  }
  retention_thread.join();
  notifier.stop();
  if (scheduler_driver) {
    scheduler_driver->stop();
    scheduler_thread.join();
  }
  // The executor's last tasks (a report batch whose request outlived the 5 s drain) use the
  // gateway and the services, which are destroyed before it: finish them first.
  executor.join();
  log->info("stopped");
  return 0;
}
