// kiln-jobsim: composition root of the simulated job scheduler (agents/sim/jobsim/job_sim.h).
// Reads flags and the token, serves kilnd's release requests, starts the jobs, and runs the
// releases on one thread until SIGTERM/SIGINT.

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <csignal>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "agents/sim/jobsim/job_sim.h"
#include "agents/sim/jobsim/kilnd_fleet_api.h"
#include "orchestrator/http/client.h"
#include "orchestrator/http/server.h"

namespace {

using namespace kiln;
using namespace kiln::jobsim;

std::optional<std::string> readSecret(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string text = buf.str();
  const auto b = text.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return std::nullopt;
  return text.substr(b, text.find_last_not_of(" \t\r\n") - b + 1);
}

class HookHandler final : public http::Handler {
 public:
  HookHandler(ReleaseBook& book, LogFn log, std::function<void()> wake)
      : book_(book), log_(std::move(log)), wake_(std::move(wake)) {}

  std::optional<http::Response> admit(const http::Request&, std::optional<std::uint64_t> length) override {
    if (length && *length > kMaxBody) {
      http::Response r;
      r.status = 413;
      r.body = R"({"error":{"code":"payload_too_large","message":"a release request is at most 1 MiB","details":{}}})";
      return r;
    }
    return std::nullopt;
  }

  // Cheap (a parse and a map insert under a lock): answered on the network thread.
  void handle(http::Request request, http::Reply reply) override {
    try {
      reply(answerHook(book_, request.method, request.body, log_));
      wake_();
    } catch (const std::exception& e) {
      log_(std::string("internal error answering a release request: ") + e.what());
      http::Response r;
      r.status = 500;
      r.body = R"({"error":{"code":"internal","message":"internal error","details":{}}})";
      reply(r);
    }
  }

 private:
  static constexpr std::uint64_t kMaxBody = 1 << 20;
  ReleaseBook& book_;
  LogFn log_;
  std::function<void()> wake_;
};

int run(const CliOptions& opt, spdlog::logger& logger) {
  auto token = readSecret(opt.token_file);
  if (!token) {
    logger.error("cannot read an API token from {}", opt.token_file);
    return 2;
  }
  LogFn log = [&logger](const std::string& line) { logger.info("{}", line); };

  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  http::initializeNetworkThreads(2);
  core::SystemClock clock;
  ReleaseBook book(clock, opt.hold);
  KilndFleetApi api(opt.url, *token);

  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  auto wake = [&] { cv.notify_all(); };

  // Listen before the jobs start: a release request kilnd sends meanwhile is not lost (kilnd
  // asks once per pod and rollout).
  HookHandler handler(book, log, wake);
  http::ServerOptions server_options;
  server_options.host = opt.listen_host;
  server_options.port = opt.listen_port;
  server_options.max_in_flight = 256;
  auto server = http::makeServer(server_options, handler);
  if (auto st = server->start(); !st.ok()) {
    logger.error("{}", st.error().message);
    return 1;
  }
  logger.info("serving release requests on http://{}:{} (hold {} s), kilnd at {}", opt.listen_host,
              opt.listen_port, static_cast<double>(opt.hold.count()) / 1000.0, opt.url);

  std::vector<std::string> pods = opt.allocate_pods;
  if (opt.allocate_fraction) {
    auto all = api.listPods();
    if (!all.ok()) {
      logger.error("listing pods: {}", all.error().message);
      server->stop(0);
      return 1;
    }
    pods = pickPods(*all, *opt.allocate_fraction, opt.seed);
    logger.info("--allocate-fraction {} (seed {}): {} of {} pods", *opt.allocate_fraction, opt.seed, pods.size(),
                all->size());
  }
  auto started = startJobs(api, pods, log);
  if (!started.ok()) {
    logger.error("starting the jobs: {}", started.error().message);
    server->stop(0);
    return 1;
  }
  logger.info("jobs running on {} pods: {} hosts allocated", pods.size(), started->allocated);

  // The releases: due ones are run here, one at a time.
  std::thread releaser([&] {
    std::unique_lock lock(mu);
    while (!stopping) {
      lock.unlock();
      try {
        for (const auto& r : book.takeDue()) releaseHosts(api, r, log);
      } catch (const std::exception& e) {
        logger.error("release pass failed: {}", e.what());
      }
      lock.lock();
      cv.wait_for(lock, std::chrono::milliseconds(250), [&] { return stopping; });
    }
  });

  int sig = 0;
  sigwait(&stop_signals, &sig);
  logger.info("signal {}: stopping", sig);
  server->stop(1000);
  {
    std::lock_guard lock(mu);
    stopping = true;
  }
  cv.notify_all();
  releaser.join();
  for (const auto& p : book.pending())
    logger.warn("pod {}: release of {} hosts not done (the job keeps them; release them with POST "
                "/api/v1/hosts/{{id}}/actions {{\"action\": \"release\"}})",
                p.pod, p.hosts.size());
  logger.info("stopped");
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
    std::cerr << "kiln-jobsim: " << opt.error().message << "\n" << usage();
    return 2;
  }
  auto logger = std::make_shared<spdlog::logger>("kiln-jobsim", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  logger->set_level(spdlog::level::from_str(opt->log_level));
  logger->flush_on(spdlog::level::info);
  try {
    return run(*opt, *logger);
  } catch (const std::exception& e) {
    logger->error("internal error: {}", e.what());
    return 70;
  }
}
