#include "tests/support/nginx.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

namespace kiln::testing {
namespace {

std::string readAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool answers(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

Nginx::Nginx(std::string dir, int port, std::string slow_rate)
    : dir_(std::move(dir)), slow_rate_(std::move(slow_rate)), port_(port) {
  std::filesystem::create_directories(dir_ + "/www/slow");
  std::filesystem::create_directories(dir_ + "/tmp");
  std::ofstream conf(dir_ + "/nginx.conf", std::ios::trunc);
  conf << "daemon off;\nmaster_process off;\nworker_processes 1;\n"
       << "pid " << dir_ << "/nginx.pid;\nerror_log " << dir_ << "/error.log info;\n"
       << "events { worker_connections 1024; }\n"
       << "http {\n"
       << "  log_format kiln '$request_method $uri $status range=$http_range bytes=$body_bytes_sent';\n"
       << "  access_log " << dir_ << "/access.log kiln;\n";
  for (const char* t : {"client_body", "proxy", "fastcgi", "uwsgi", "scgi"})
    conf << "  " << t << "_temp_path " << dir_ << "/tmp/" << t << ";\n";
  conf << "  default_type application/octet-stream;\n  sendfile on;\n  keepalive_requests 100000;\n"
       << "  server {\n    listen 127.0.0.1:" << port_ << " backlog=4096;\n    root " << dir_ << "/www;\n"
       << "    location /slow/ { limit_rate " << slow_rate_ << "; }\n  }\n}\n";
}

Nginx::~Nginx() {
  kill();
}

bool Nginx::start() {
  if (running()) return true;
  proc_ = std::make_unique<ChildProcess>(
      std::vector<std::string>{"/usr/sbin/nginx", "-p", dir_, "-e", dir_ + "/error.log", "-c", dir_ + "/nginx.conf"},
      dir_ + "/nginx.out");
  for (int i = 0; i < 200; ++i) {
    if (answers(port_)) return true;
    if (!proc_->running()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::cerr << "nginx did not start:\n" << readAll(dir_ + "/nginx.out") << readAll(dir_ + "/error.log") << std::endl;
  return false;
}

void Nginx::kill() {
  if (!proc_) return;
  proc_->signal(SIGKILL);
  proc_->waitExit(std::chrono::seconds(10));
  proc_.reset();
}

bool Nginx::running() {
  return proc_ && proc_->running();
}

std::string Nginx::accessLog() const {
  return readAll(dir_ + "/access.log");
}

}  // namespace kiln::testing
