#include "tests/support/kilnd_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "orchestrator/http/client.h"

extern char** environ;

namespace kiln::testing {
namespace {

int exitStatus(int wstatus) {
  if (WIFEXITED(wstatus)) return WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus)) return 128 + WTERMSIG(wstatus);
  return -1;
}

int failedSoFar() {
  auto* unit = ::testing::UnitTest::GetInstance();
  return unit ? unit->failed_test_count() : 0;
}

std::string readWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

int freeLoopbackPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  KILN_CHECK(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  KILN_CHECK(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  socklen_t len = sizeof addr;
  KILN_CHECK(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  ::close(fd);
  return ntohs(addr.sin_port);
}

KilndProcess::KilndProcess(KilndOptions options) : options_(std::move(options)) {
  KILN_CHECK(!options_.database_url.empty());
  char tmpl[] = "/tmp/kiln-kilnd-XXXXXX";
  KILN_CHECK(::mkdtemp(tmpl) != nullptr);
  dir_ = tmpl;
  log_path_ = dir_ + "/kilnd.log";
  token_file_ = options_.admin_token_file.empty() ? dir_ + "/admin-token" : options_.admin_token_file;
  failures_at_start_ = failedSoFar();
}

KilndProcess::~KilndProcess() {
  if (running()) kill();
  const bool failed = ::testing::Test::HasFailure() || failedSoFar() > failures_at_start_;
  if (failed) {
    std::fprintf(stderr, "---- kilnd (%s) log tail, %s ----\n%s---- end of kilnd log ----\n", url().c_str(),
                 log_path_.c_str(), logTail(60).c_str());
  } else {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

std::string KilndProcess::binary() const {
  if (!options_.binary.empty()) return options_.binary;
#ifdef KILN_KILND_BIN
  return KILN_KILND_BIN;
#else
  return "kilnd";
#endif
}

std::string KilndProcess::url() const {
  const bool tls = !options_.tls_cert.empty();
  return std::string(tls ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_);
}

Status KilndProcess::start() {
  KILN_CHECK(!running());
  const bool pick_port = port_ == 0;
  Status last = Ok{};
  // A freshly chosen port can be taken by someone else before kilnd binds it: try another.
  for (int attempt = 0; attempt < (pick_port ? 3 : 1); ++attempt) {
    if (pick_port) port_ = freeLoopbackPort();
    last = spawn();
    if (last.ok()) return last;
    if (running()) kill();
    if (last.error().message.find("cannot listen") == std::string::npos) break;
  }
  return last;
}

Status KilndProcess::spawn() {
  std::vector<std::string> args = {binary(),
                                   "--database-url", options_.database_url,
                                   "--listen", "127.0.0.1:" + std::to_string(port_),
                                   "--admin-token-file", token_file_,
                                   "--log-level", options_.log_level};
  if (!options_.tls_cert.empty()) {
    args.insert(args.end(), {"--tls-cert", options_.tls_cert, "--tls-key", options_.tls_key});
  }
  args.insert(args.end(), options_.extra_args.begin(), options_.extra_args.end());

  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : options_.extra_env) env[k] = v;
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);

  // Everything the child needs is prepared before fork: after it only async-signal-safe calls.
  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);

  const int log_fd = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) return unavailable("cannot open " + log_path_ + ": " + std::strerror(errno));
  int exec_pipe[2];
  KILN_CHECK(::pipe2(exec_pipe, O_CLOEXEC) == 0);
  const pid_t parent = ::getpid();

  const pid_t pid = ::fork();
  KILN_CHECK(pid >= 0);
  if (pid == 0) {
    // kilnd must not outlive the test process (PR_SET_PDEATHSIG fires when the forking
    // thread exits).
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int sig : {SIGTERM, SIGINT, SIGPIPE, SIGCHLD, SIGHUP}) ::signal(sig, SIG_DFL);
    const int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd >= 0) ::dup2(null_fd, 0);
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    ::execve(argv[0], argv.data(), envp.data());
    const int err = errno;
    [[maybe_unused]] auto n = ::write(exec_pipe[1], &err, sizeof err);
    ::_exit(127);
  }
  ::close(log_fd);
  ::close(exec_pipe[1]);
  int exec_errno = 0;
  ssize_t n;
  do {
    n = ::read(exec_pipe[0], &exec_errno, sizeof exec_errno);
  } while (n < 0 && errno == EINTR);
  ::close(exec_pipe[0]);
  pid_ = pid;
  alive_ = true;
  exit_status_ = -1;
  if (n > 0) {
    waitExit(std::chrono::milliseconds(5000));
    return unavailable("cannot execute " + args[0] + ": " + std::strerror(exec_errno));
  }

  http::ClientOptions client_options;
  client_options.base_url = url();
  client_options.ca_file = options_.ca_file;
  client_options.timeout = std::chrono::milliseconds(2000);
  http::Client client(client_options);
  const bool can_probe = options_.tls_cert.empty() || !options_.ca_file.empty();
  const auto deadline = std::chrono::steady_clock::now() + options_.start_timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (!running()) {
      return unavailable("kilnd exited with status " + std::to_string(exit_status_) + " while starting:\n" +
                         logTail(20));
    }
    bool ready = false;
    if (can_probe) {
      auto r = client.request("GET", "/healthz");
      ready = r.ok() && r->status == 200;
    } else {
      // HTTPS without a CA to verify it: trust kilnd's own "serving" line.
      ready = readWhole(log_path_).find("kilnd serving") != std::string::npos;
    }
    if (ready) {
      std::string token = readWhole(token_file_);
      while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
      admin_token_ = token;
      return Ok{};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return unavailable("kilnd did not answer GET /healthz within " +
                     std::to_string(options_.start_timeout.count()) + " ms:\n" + logTail(20));
}

bool KilndProcess::running() {
  if (!alive_) return false;
  int wstatus = 0;
  const pid_t r = ::waitpid(pid_, &wstatus, WNOHANG);
  if (r == 0) return true;
  exit_status_ = r == pid_ ? exitStatus(wstatus) : 255;
  alive_ = false;
  return false;
}

void KilndProcess::signal(int sig) {
  if (alive_) ::kill(pid_, sig);
}

std::optional<int> KilndProcess::waitExit(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (running()) {
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return exit_status_;
}

int KilndProcess::stop() {
  KILN_CHECK(pid_ > 0);
  signal(SIGTERM);
  if (auto status = waitExit(options_.stop_timeout)) return *status;
  return kill();
}

int KilndProcess::kill() {
  KILN_CHECK(pid_ > 0);
  signal(SIGKILL);
  return waitExit(std::chrono::milliseconds(60000)).value_or(-1);
}

Status KilndProcess::restart() {
  if (running()) stop();
  return start();
}

std::string KilndProcess::logTail(int lines) const {
  const std::string text = readWhole(log_path_);
  std::size_t pos = text.size();
  if (pos > 0 && text[pos - 1] == '\n') --pos;
  for (int i = 0; i < lines && pos > 0; ++i) {
    auto nl = text.rfind('\n', pos - 1);
    if (nl == std::string::npos) {
      pos = 0;
      break;
    }
    pos = nl;
  }
  std::string tail = text.substr(pos == 0 ? 0 : pos + 1);
  if (!tail.empty() && tail.back() != '\n') tail += '\n';
  return tail;
}

}  // namespace kiln::testing
