#pragma once
// The real `kilnd` binary as a child process, for the api and e2e test tiers and benchmarks.
// Each instance gets a free loopback port, a private temporary directory (admin token file,
// log file) and its own process; several instances may share one database (replicas).
//
//   kiln::testing::TestDatabase db;
//   kiln::testing::KilndProcess kilnd({.database_url = db.url()});
//   ASSERT_TRUE(kilnd.start().ok());
//   kiln::http::Client client({.base_url = kilnd.url(), .token = kilnd.adminToken()});
//
// The binary is KILN_KILND_BIN, a compile definition the kiln_testsupport_kilnd target passes
// on to whatever links it ("$<TARGET_FILE:kilnd>"); KilndOptions::binary overrides it.
// kilnd's stdout and stderr go to logPath(); when the owning GoogleTest test (or any test
// since construction) failed, the destructor prints the log's tail to stderr.
//
// Not thread-safe: one thread drives an instance (other threads may use url() and tokens).
// kilnd gets SIGKILL when the thread that called start() exits (PR_SET_PDEATHSIG), so a
// crashed test never leaves it behind: call start() from a thread that outlives the instance.

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace kiln::testing {

struct KilndOptions {
  std::string database_url;                      // required
  std::vector<std::string> extra_args;           // appended after the generated flags
  std::map<std::string, std::string> extra_env;  // on top of this process's environment
  // Empty: a file in the instance's temporary directory. A second replica on the same
  // database passes the first one's adminTokenFile(): kilnd writes the file only when the
  // database has no admin token yet.
  std::string admin_token_file;
  std::string tls_cert, tls_key;  // both set: kilnd serves HTTPS, url() is https://
  std::string ca_file;            // the CA to trust while waiting for /healthz over HTTPS
  std::string binary;             // empty: KILN_KILND_BIN
  std::string log_level = "info";
  std::chrono::milliseconds start_timeout{30000};
  std::chrono::milliseconds stop_timeout{15000};  // stop() sends SIGKILL after this
};

class KilndProcess {
 public:
  explicit KilndProcess(KilndOptions options);
  // Kills a still running kilnd (SIGKILL), prints the log tail after a test failure, removes
  // the temporary directory.
  ~KilndProcess();
  KilndProcess(const KilndProcess&) = delete;
  KilndProcess& operator=(const KilndProcess&) = delete;

  // Starts kilnd on a free port (the same port again after the first start) and waits until
  // GET /healthz answers 200. Errors (kUnavailable) carry the log tail: the binary could not
  // start, exited early, or did not become healthy within start_timeout. Pre-condition: not
  // running.
  Status start();
  // SIGTERM, then waits up to stop_timeout (SIGKILL after it). Returns the exit status: the
  // exit code, or 128 + signal number when a signal ended it (the earlier status when it had
  // already exited). Pre-condition: started at least once.
  int stop();
  // SIGKILL and reap; returns the exit status as stop() does.
  int kill();
  // stop() then start() on the same port and token file.
  Status restart();

  // Sends a signal without waiting (e.g. SIGTERM while a request is in flight).
  void signal(int sig);
  // Waits up to `timeout` for kilnd to exit; its exit status as stop() returns it, or nullopt
  // when it is still running.
  std::optional<int> waitExit(std::chrono::milliseconds timeout);
  // True while the child has not exited (reaps it when it has).
  bool running();

  // "http://127.0.0.1:PORT" (https with TLS options). Valid after the first start().
  std::string url() const;
  int port() const { return port_; }
  // The admin token read from the token file after start(); empty when the file is absent.
  const std::string& adminToken() const { return admin_token_; }
  const std::string& adminTokenFile() const { return token_file_; }
  // The last child's pid (still readable after it exited); -1 before the first start().
  pid_t pid() const { return pid_; }
  const std::string& logPath() const { return log_path_; }
  const std::string& tempDir() const { return dir_; }
  // The last `lines` lines of kilnd's output so far.
  std::string logTail(int lines = 40) const;

 private:
  Status spawn();
  std::string binary() const;

  KilndOptions options_;
  std::string dir_, log_path_, token_file_, admin_token_;
  int port_ = 0;
  pid_t pid_ = -1;        // the last child started
  bool alive_ = false;    // pid_ not reaped yet
  int exit_status_ = -1;  // of pid_, once reaped
  int failures_at_start_ = 0;
};

// A free TCP port on 127.0.0.1 at the time of the call (bind to port 0, read it, close).
int freeLoopbackPort();

}  // namespace kiln::testing
