#include "tests/support/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace kiln::testing {
namespace {

int exitStatus(int wstatus) {
  if (WIFEXITED(wstatus)) return WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus)) return 128 + WTERMSIG(wstatus);
  return -1;
}

}  // namespace

ChildProcess::ChildProcess(const std::vector<std::string>& args, const std::string& log_path, ChildOptions options) {
  if (args.empty()) throw std::runtime_error("ChildProcess: no argv");
  std::vector<std::string> a = args, e;
  if (options.env)
    for (const auto& [k, v] : *options.env) e.push_back(k + "=" + v);
  std::vector<char*> argv, envp;
  for (auto& s : a) argv.push_back(s.data());
  argv.push_back(nullptr);
  for (auto& s : e) envp.push_back(s.data());
  envp.push_back(nullptr);
  const int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("ChildProcess: cannot open " + log_path + ": " + std::strerror(errno));
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) {
    ::close(fd);
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  }
  if (pid_ == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    if (options.own_group) ::setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    const int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd >= 0) ::dup2(null_fd, 0);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    if (options.env)
      ::execve(argv[0], argv.data(), envp.data());
    else
      ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(fd);
  alive_ = true;
}

ChildProcess::~ChildProcess() {
  if (running()) {
    ::kill(pid_, SIGKILL);
    waitExit(std::chrono::seconds(10));
  }
}

void ChildProcess::signal(int sig) {
  if (alive_) ::kill(pid_, sig);
}

bool ChildProcess::running() {
  if (!alive_) return false;
  int wstatus = 0;
  const pid_t r = ::waitpid(pid_, &wstatus, WNOHANG);
  if (r == 0) return true;
  status_ = r == pid_ ? exitStatus(wstatus) : 255;
  alive_ = false;
  return false;
}

int ChildProcess::waitExit(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (running()) {
    if (std::chrono::steady_clock::now() >= deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return status_;
}

int ChildProcess::stop(std::chrono::milliseconds grace) {
  if (!running()) return status_;
  ::kill(pid_, SIGTERM);
  if (int st = waitExit(grace); st != -1) return st;
  ::kill(pid_, SIGKILL);
  return waitExit(std::chrono::seconds(10));
}

}  // namespace kiln::testing
