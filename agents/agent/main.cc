// kiln-agent: composition root of the host agent (agents/agent/agent.h). Reads flags, builds
// the collaborators, turns SIGTERM/SIGINT into Agent::requestStop().
#include <signal.h>
#include <unistd.h>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <thread>

#include "agents/agent/agent.h"
#include "common/executable_allowlist.h"
#include "agents/agent/cli.h"
#include "agents/agent/host_probe.h"
#include "agents/agent/transport.h"
#include "common/exec/gpgv.h"
#include "common/exec/process_runner.h"
#include "common/spd_log.h"
#include "agents/parsers/parsers.h"

extern char** environ;

namespace {

using namespace kiln::agent;

std::string hostname() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "";
  return name;
}

int runAgent(const std::vector<std::string>& args) {
  auto options = parseRunOptions(
      args,
      [](const std::string& name) -> std::optional<std::string> {
        const char* v = std::getenv(name.c_str());
        return v ? std::optional<std::string>(v) : std::nullopt;
      },
      hostname());
  if (!options) {
    std::cerr << "kiln-agent run: " << options.error().message << "\n" << kUsage;
    return 2;
  }
  const RunOptions& o = *options;

  // SIGTERM/SIGINT are taken by sigwait on one thread: block them before any thread starts
  // (steps start with a clean signal mask: the runner resets it in the child).
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  auto spd = std::make_shared<spdlog::logger>("kiln-agent", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  spd->set_level(spdlog::level::from_str(o.log_level));
  (void)kiln::setLogFormat(*spd, "text");  // kilnd's text format: a component's lines say "[component]"
  spd->flush_on(spdlog::level::info);
  std::shared_ptr<kiln::Logger> log = kiln::makeSpdLogger(spd);

  if (!kiln::exec::becomeSubreaper()) log->warn("cannot become a child subreaper");
  initializeHttpThreads(2);

  std::vector<std::string> allow = kiln::exec::defaultEnvAllowList();
  allow.insert(allow.end(), o.env_allow.begin(), o.env_allow.end());
  std::string path;
  for (const std::string& dir : o.path_prepend) path += (path.empty() ? "" : ":") + dir;
  if (const char* parent = std::getenv("PATH"); parent && *parent) {
    path += (path.empty() ? "" : ":") + std::string(parent);
  }
  std::map<std::string, std::string> extra;
  if (!path.empty()) extra["PATH"] = path;

  AgentSettings settings;
  if (!o.allowed_executables.empty()) {
    auto list = kiln::loadExecutableAllowList(o.allowed_executables);
    if (!list.ok()) {
      std::cerr << "kiln-agent: --allowed-executables: " << list.error().message << "\n";
      return 2;
    }
    settings.allowed_executables = std::move(*list);
  }
  settings.host = o.host;
  settings.state_dir = o.state_dir;
  settings.enroll_token_file = o.enroll_token_file;
  settings.poll_wait_s = o.poll_wait_s;
  settings.step_env = kiln::exec::allowListedEnvironment(environ, allow, extra);
  settings.stop_grace = std::chrono::seconds(o.stop_grace_s);
  settings.live_output.interval = std::chrono::seconds(o.live_output_interval_s);
  if (o.live_output_interval_s == 0) settings.live_output.cap = 0;

  HttpTransportOptions transport_options;
  transport_options.base_url = o.url;
  transport_options.ca_file = o.ca_file;
  transport_options.client_cert = o.client_cert;
  transport_options.client_key = o.client_key;
  transport_options.long_poll_timeout = std::chrono::seconds(o.poll_wait_s + 20);
  auto transport = makeHttpTransport(transport_options);
  auto runner = kiln::exec::makeBoostProcessRunner();
  CommandHostProbe probe(*runner, splitCommand(o.inventory_command), settings.step_env,
                         o.boot_id_file, !o.boot_id_file.empty());
  kiln::SystemClock clock;

  ArtifactSettings artifact_settings;
  artifact_settings.cache_dir = o.artifact_cache.empty() ? std::filesystem::path(o.state_dir) / "artifacts"
                                                          : std::filesystem::path(o.artifact_cache);
  artifact_settings.cache_max_bytes = o.artifact_cache_max;
  artifact_settings.rate_limit_bytes_per_s = o.artifact_rate_limit;
  artifact_settings.ca_bundle = o.artifact_ca_bundle;
  artifact_settings.mirrors = o.artifact_mirrors;
  kiln::SignatureCheck verify;
  if (!o.trusted_keys.empty()) {
    std::error_code ec;
    const auto keys = std::filesystem::absolute(o.trusted_keys, ec);
    if (ec || !std::filesystem::is_regular_file(keys, ec) || ::access(keys.c_str(), R_OK) != 0) {
      std::cerr << "kiln-agent: --trusted-keys: cannot read " << o.trusted_keys << "\n";
      return 2;
    }
    verify = kiln::exec::gpgvCheck(*runner, keys.string(), (artifact_settings.cache_dir / ".partial").string());
  }
  auto downloader = makeCurlDownloader(artifact_settings);
  ArtifactFetcher fetcher(artifact_settings, *downloader, verify, log->named("artifacts"));
  if (auto st = fetcher.open(); !st) {
    std::cerr << "kiln-agent: " << st.error().message << "\n";
    return 2;
  }
  Agent agent(settings, *transport, *runner, probe, clock, log);
  agent.useArtifacts(fetcher);

  std::thread([&agent, stop_signals, log] {
    int sig = 0;
    if (sigwait(&stop_signals, &sig) == 0) {
      log->info("signal {}: stopping", sig);
      agent.requestStop();
    }
  }).detach();

  log->info("kiln-agent {} for {} -> {}", kAgentVersion, o.host, o.url);
  kiln::Status st = agent.run();
  if (!st) log->error("{}", st.error().message);
  spd->flush();
  std::cout.flush();
  // Abandoned HTTP calls may still run on network threads: end without running destructors
  // (everything that matters is fsync'ed in the journal already).
  std::_Exit(st ? 0 : 1);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::cerr << kUsage;
    return 2;
  }
  const std::string command = args.front();
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (command == "-h" || command == "--help" || command == "help") {
    std::cout << kUsage;
    return 0;
  }
  try {
    if (command == "parse") return kiln::parsers::runParseCommand(rest, std::cin, std::cout, std::cerr);
    if (command == "run") return runAgent(rest);
  } catch (const std::exception& e) {
    std::cerr << "kiln-agent: internal error: " << e.what() << "\n";
    return 70;
  }
  std::cerr << "kiln-agent: unknown command '" << command << "'\n" << kUsage;
  return 2;
}
