#pragma once
// A real nginx (Debian's) serving a directory, for the artifact tests and the staging benchmark
// (issue 31): the per-building mirror kiln-agent fetches firmware from. One process
// (master_process off), so SIGKILL ends it at once: a mirror that dies mid-download. Its access
// log records each request's status and Range header. Not thread-safe.

#include <memory>
#include <string>

#include "tests/support/child_process.h"

namespace kiln::testing {

class Nginx {
 public:
  // Serves `dir`/www on 127.0.0.1:`port`; under /slow/ at most `slow_rate` bytes/s per
  // connection (nginx's limit_rate, e.g. "256k"). Files and logs live under `dir`.
  Nginx(std::string dir, int port, std::string slow_rate = "256k");
  ~Nginx();
  Nginx(const Nginx&) = delete;
  Nginx& operator=(const Nginx&) = delete;

  // Starts it and waits until it answers (false, with its log on stderr, when it does not
  // within 10 s). start() again after kill() serves the same files.
  bool start();
  void kill();  // SIGKILL: connections reset mid-transfer
  bool running();

  std::string www() const { return dir_ + "/www"; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/"; }
  // Lines "GET /path STATUS range=RANGE bytes=N", oldest first.
  std::string accessLog() const;

 private:
  std::string dir_, slow_rate_;
  int port_;
  std::unique_ptr<ChildProcess> proc_;
};

}  // namespace kiln::testing
