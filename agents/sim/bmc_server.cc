#include "agents/sim/bmc_server.h"

#include <unistd.h>

#include <pthread.h>
#include <signal.h>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <mutex>
#include <random>
#include <sstream>

#include "agents/sim/redfish_bmc.h"
#include "orchestrator/http/server.h"

namespace kiln::sim {
namespace {

class BmcHandler final : public http::Handler {
 public:
  BmcHandler(BmcConfig config, std::string boot_id_file)
      : bmc_(std::move(config)), boot_id_file_(std::move(boot_id_file)) {}
  std::optional<http::Response> admit(const http::Request& head, std::optional<std::uint64_t> length) override {
    // Firmware images go to the push URI (up to 64 MiB); everything else is small JSON.
    const std::size_t limit = head.path == "/redfish/v1/UpdateService/update-multipart" ? (64u << 20) : 65536;
    if (length && *length > limit)
      return http::Response{413, "application/json", redfishError("GeneralError", "Body too large.").dump(), {}};
    return std::nullopt;
  }
  void handle(http::Request request, http::Reply reply) override {
    BmcRequest r{request.method, request.path, request.headers, request.body};
    BmcResponse out;
    {
      std::lock_guard lock(mu_);
      out = bmc_.handle(r, RedfishBmc::Clock::now());
      if (bmc_.sessionsMade() != sessions_made_ || bmc_.sessionsOpen() != sessions_open_) {
        sessions_made_ = bmc_.sessionsMade();
        sessions_open_ = bmc_.sessionsOpen();
        std::cerr << "bmc: sessions made " << sessions_made_ << ", open " << sessions_open_ << std::endl;
      }
      if (bmc_.bmcResets() != resets_) {
        resets_ = bmc_.bmcResets();
        std::cerr << "bmc: manager reset (" << resets_ << " so far)" << std::endl;
      }
      if (bmc_.updatesPushed() != pushed_) {
        pushed_ = bmc_.updatesPushed();
        std::cerr << "bmc: update pushed (" << pushed_ << " so far)" << std::endl;
      }
      if (!bmc_.powerLog().empty() && bmc_.powerLog().size() != logged_) {
        for (; logged_ < bmc_.powerLog().size(); ++logged_) {
          const std::string& type = bmc_.powerLog()[logged_];
          std::cerr << "bmc: reset " << type << std::endl;
          // The tray boots: a simulated host's agent (--boot-id-file) sees a new boot id.
          if (!boot_id_file_.empty() && type != "ForceOff" && type != "GracefulShutdown") newBootId();
        }
      }
    }
    http::Response resp;
    resp.status = out.status;
    resp.body = out.body.is_null() ? "" : out.body.dump();
    resp.content_type = "application/json; charset=utf-8";
    resp.headers = out.headers;
    resp.headers.push_back({"OData-Version", "4.0"});
    reply(std::move(resp));
  }

 private:
  void newBootId() {
    std::random_device rd;
    char id[40];
    std::snprintf(id, sizeof id, "%08x-%04x-%04x-%04x-%08x%04x", rd(), rd() & 0xffff, rd() & 0xffff, rd() & 0xffff,
                  rd(), rd() & 0xffff);
    std::ofstream out(boot_id_file_ + ".tmp");
    out << id << "\n";
    out.close();
    std::rename((boot_id_file_ + ".tmp").c_str(), boot_id_file_.c_str());
  }

  std::mutex mu_;
  RedfishBmc bmc_;
  std::string boot_id_file_;
  std::size_t logged_ = 0, pushed_ = 0, sessions_open_ = 0;
  int sessions_made_ = 0, resets_ = 0;
};

}  // namespace

int runBmcServer(const std::vector<std::string>& args) {
  auto usage = [](const std::string& why) {
    std::cerr
        << "kiln-hwsim bmc: " << why
        << "\nusage: kiln-hwsim bmc --listen HOST:PORT --user USER --password-file FILE [--tray NAME]\n"
           "                      [--tls-cert FILE --tls-key FILE] [--firmware ID=VERSION]... [--fault reset-ignored]\n"
           "                      [--port-file FILE] [--boot-id-file FILE]\n"
           "--boot-id-file: a new boot id is written there whenever the tray is reset on (a simulated\n"
           "host's kiln-agent --boot-id-file sees it boot)\n";
    return 2;
  };
  BmcConfig config;
  http::ServerOptions options;
  options.threads = 1;
  std::string listen, password_file, port_file, boot_id_file;
  bool firmware_given = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (i + 1 >= args.size()) return usage(a + " needs a value");
    const std::string& v = args[++i];
    if (a == "--listen")
      listen = v;
    else if (a == "--user")
      config.user = v;
    else if (a == "--password-file")
      password_file = v;
    else if (a == "--tray")
      config.tray = v;
    else if (a == "--tls-cert")
      options.tls_cert_file = v;
    else if (a == "--tls-key")
      options.tls_key_file = v;
    else if (a == "--port-file")
      port_file = v;
    else if (a == "--boot-id-file")
      boot_id_file = v;
    else if (a == "--fault") {
      if (v != "reset-ignored" && v != "task-hangs" && v != "version-unchanged")
        return usage("unknown fault '" + v + "' (expected reset-ignored, task-hangs or version-unchanged)");
      config.faults.insert(v);
    } else if (a == "--firmware") {
      const auto eq = v.find('=');
      if (eq == std::string::npos || eq == 0) return usage("--firmware: expected ID=VERSION");
      if (!firmware_given) config.firmware.clear();
      firmware_given = true;
      config.firmware[v.substr(0, eq)] = v.substr(eq + 1);
    } else {
      return usage("unknown option '" + a + "'");
    }
  }
  const auto colon = listen.rfind(':');
  if (colon == std::string::npos) return usage("--listen: expected HOST:PORT");
  options.host = listen.substr(0, colon);
  try {
    options.port = std::stoi(listen.substr(colon + 1));
  } catch (...) {
    return usage("--listen: bad port");
  }
  if (config.user.empty() || password_file.empty()) return usage("--user and --password-file are required");
  {
    std::ifstream in(password_file);
    if (!in) return usage("cannot read " + password_file);
    std::getline(in, config.password);
  }
  if (config.password.empty()) return usage(password_file + " is empty");
  if (options.tls_cert_file.empty() != options.tls_key_file.empty())
    return usage("--tls-cert and --tls-key go together");
  // SIGTERM/SIGINT blocked before the server's threads start (they inherit the mask), then
  // taken by sigwait below: the main thread alone receives them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  BmcHandler handler(std::move(config), boot_id_file);
  auto server = http::makeServer(options, handler);
  if (auto st = server->start(); !st.ok()) {
    std::cerr << "kiln-hwsim bmc: " << st.error().message << "\n";
    return 1;
  }
  if (!port_file.empty()) {
    std::ofstream tmp(port_file + ".tmp");
    tmp << server->port() << "\n";
    tmp.close();
    std::rename((port_file + ".tmp").c_str(), port_file.c_str());
  }
  std::cerr << "kiln-hwsim bmc: listening on " << options.host << ":" << server->port()
            << (options.tls_cert_file.empty() ? " (http)" : " (https)") << std::endl;
  int sig = 0;
  sigwait(&stop_signals, &sig);
  server->stop(1000);
  return 0;
}

}  // namespace kiln::sim
