// The real ProcessRunner on Boost.Process 1.74. The only file that includes Boost.Process.
//
// How a step runs (docs/DEPENDENCIES.md, "Boost.Process 1.74", traps 1-6):
// - the child gets its own process group (setpgid in the forked child), a clean signal state
//   and only its stdio: every other descriptor is marked close-on-exec, so a step spawned by
//   one thread never holds the pipes of a step spawned by another;
// - stdout and stderr are read concurrently on one io_context (trap 1), stdin is written on it;
// - one steady_timer "tick" polls the cancel token and the child's state with
//   waitid(WNOWAIT), which peeks without reaping: no SIGCHLD handler, no wait_for (traps 2, 4);
// - the step ends when its main process has exited, its group is empty and both pipes are
//   closed. Timeout, cancel, or leftovers after the main process exits: SIGTERM (+SIGCONT) to
//   the group, SIGKILL after kill_grace (trap 5). The main process is always reaped with
//   child::wait() (trap 3), orphaned group members with waitpid(-pgid) (trap 6, with
//   becomeSubreaper()).

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/process.hpp>
#include <boost/process/extend.hpp>
#include <cerrno>
#include <cstring>
#include <optional>
#include <system_error>
#include <utility>

#include "common/exec/process_runner.h"

namespace kiln::exec {
namespace {

namespace asio = boost::asio;
namespace bp = boost::process;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

// The cancel token is polled at least this often; the poll starts faster so that short steps
// are collected within a millisecond or two of their exit.
constexpr milliseconds kMinPoll{1};
constexpr milliseconds kMaxPoll{50};
// After the group is gone, how long pipes may stay open (held by a process that left the
// group with setsid) before the runner stops reading them.
constexpr milliseconds kEscapedWriterLinger{500};
// After SIGKILL, how long the runner waits for group members other than the main process
// to be reaped before it stops waiting: without becomeSubreaper() killed orphans become
// zombies of PID 1, which may never reap them, and the step must not hang on that.
constexpr milliseconds kMinSettleAfterKill{1000};
constexpr std::size_t kReadChunk = 64 * 1024;

std::string errnoText(int err) { return std::error_code(err, std::system_category()).message(); }

// "" when path names an executable regular file; otherwise why not, naming it `shown`.
std::string checkExecutable(const std::string& shown, const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    int err = errno;
    if (err == ENOENT || err == ENOTDIR) return "no such file: " + shown;
    return "cannot access " + shown + ": " + errnoText(err);
  }
  if (S_ISDIR(st.st_mode)) return "is a directory: " + shown;
  if (::access(path.c_str(), X_OK) != 0) return "not executable: " + shown;
  return "";
}

// The child chdirs before exec, so a relative program path is relative to working_dir.
std::string pathAsSeenByChild(const std::string& path, const std::string& working_dir) {
  if (path.front() == '/' || working_dir.empty()) return path;
  return working_dir + "/" + path;
}

// Finds the program to exec: argv[0] itself when it has a '/', else the first executable
// match in the step's own PATH (not the agent's). Returns "" and sets *error if none.
std::string resolveProgram(const ProcessSpec& spec, std::string* error) {
  const std::string& name = spec.argv.front();
  if (name.empty()) {
    *error = "empty program name";
    return "";
  }
  if (name.find('/') != std::string::npos) {
    *error = checkExecutable(name, pathAsSeenByChild(name, spec.working_dir));
    return error->empty() ? name : "";
  }
  auto path = spec.env.find("PATH");
  if (path == spec.env.end() || path->second.empty()) {
    *error = "no such file: " + name + " (no PATH in the step environment)";
    return "";
  }
  std::string other_error;  // e.g. found but not executable: more useful than "no such file"
  std::size_t begin = 0;
  while (begin <= path->second.size()) {
    std::size_t end = path->second.find(':', begin);
    if (end == std::string::npos) end = path->second.size();
    std::string dir = path->second.substr(begin, end - begin);
    begin = end + 1;
    if (dir.empty()) continue;  // an empty entry would mean "the working directory": not for us
    std::string candidate = dir + "/" + name;
    std::string why = checkExecutable(candidate, pathAsSeenByChild(candidate, spec.working_dir));
    if (why.empty()) return candidate;
    if (other_error.empty() && why.rfind("no such file", 0) != 0) other_error = why;
  }
  *error = other_error.empty() ? "no such file: " + name : other_error;
  return "";
}

bool sigchldIgnored() {
  struct sigaction current {};
  ::sigaction(SIGCHLD, nullptr, &current);
  return (!(current.sa_flags & SA_SIGINFO) && current.sa_handler == SIG_IGN) ||
         (current.sa_flags & SA_NOCLDWAIT);
}

// Boost.Process initializer for what the step's child needs beyond stdio.
// on_exec_setup runs in the forked child of a multi-threaded process: async-signal-safe
// calls only, no allocation.
struct StepChildSetup : bp::extend::handler {
  char** envp = nullptr;        // the complete environment
  char* const* argv = nullptr;  // argv as the step gave it (keeps argv[0])
  const char* working_dir = nullptr;
  int max_fd = 0;                // fallback bound when close_range is unavailable
  pid_t* spawned_pid = nullptr;  // out: the forked pid, also when exec failed

  template <class Executor>
  void on_setup(Executor& exec) const {
    exec.env = envp;
  }

  template <class Executor>
  void on_exec_setup(Executor& exec) const {
    ::setpgid(0, 0);
    // Dispositions set to SIG_IGN and the signal mask survive exec: start the step clean, so
    // that our SIGTERM reaches it even if the agent's thread blocked or ignored signals.
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    ::sigemptyset(&dfl.sa_mask);
    for (int sig = 1; sig < NSIG; ++sig) {
      if (sig != SIGKILL && sig != SIGSTOP) ::sigaction(sig, &dfl, nullptr);
    }
    // Boost's pipes are created without O_CLOEXEC: without this, a step would inherit the
    // pipes of steps other threads are running and hold their EOF hostage.
    if (::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
      for (int fd = 3; fd < max_fd; ++fd) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
    // Boost's start_dir ignores a failed chdir and runs the program anyway; we report it.
    if (working_dir != nullptr && ::chdir(working_dir) != 0) {
      exec.set_error(bp::extend::get_last_error(), "chdir");
      ::_exit(127);
    }
    exec.cmd_line = argv;
  }

  template <class Executor>
  void on_error(Executor& exec, const std::error_code&) const {
    *spawned_pid = exec.pid;
  }

  template <class Executor>
  void on_success(Executor& exec) const {
    *spawned_pid = exec.pid;
  }
};

// One output stream of the step: total byte count, the last `cap` bytes and optionally the
// first `head_cap` bytes.
struct Stream {
  Stream(std::size_t cap_bytes, std::size_t head_cap_bytes)
      : cap(cap_bytes), head_cap(head_cap_bytes), chunk(kReadChunk) {}

  void append(const char* data, std::size_t n) {
    bytes += n;
    if (head.size() < head_cap) head.append(data, std::min(n, head_cap - head.size()));
    if (cap == 0) return;
    if (n >= cap) {
      tail.assign(data + (n - cap), cap);
      return;
    }
    tail.append(data, n);
    // Trim in batches so that keeping the tail costs O(1) amortised per byte.
    if (tail.size() > 2 * cap) tail.erase(0, tail.size() - cap);
  }

  std::string takeTail() {
    if (tail.size() > cap) tail.erase(0, tail.size() - cap);
    return std::move(tail);
  }

  std::size_t cap;
  std::size_t head_cap;
  std::vector<char> chunk;
  std::string tail;
  std::string head;
  std::uint64_t bytes = 0;
  std::optional<bp::async_pipe> pipe;
  bool open = false;
};

// Blocks SIGPIPE in the calling thread while stdin is written (a child that exits without
// reading its input must not kill the agent) and discards a SIGPIPE raised meanwhile.
class SigpipeBlock {
 public:
  SigpipeBlock() {
    sigemptyset(&pipe_set_);
    sigaddset(&pipe_set_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set_, &previous_);
  }
  ~SigpipeBlock() {
    if (!sigismember(&previous_, SIGPIPE)) {
      sigset_t pending;
      sigpending(&pending);
      if (sigismember(&pending, SIGPIPE)) {
        timespec zero{0, 0};
        sigtimedwait(&pipe_set_, nullptr, &zero);
      }
    }
    pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
  }
  SigpipeBlock(const SigpipeBlock&) = delete;
  SigpipeBlock& operator=(const SigpipeBlock&) = delete;

 private:
  sigset_t pipe_set_;
  sigset_t previous_;
};

// One execution of one ProcessSpec. Lives on the stack of run(); single-threaded.
class StepRun {
 public:
  StepRun(const ProcessSpec& spec, const CancelToken* cancel)
      : spec_(spec), cancel_(cancel), out_(spec.output_cap, spec.parse_capture_cap), err_(spec.output_cap, 0) {}
  StepRun(const StepRun&) = delete;
  StepRun& operator=(const StepRun&) = delete;

  ~StepRun() {
    // Only reached with a live child when an exception escaped (on_started threw, or
    // allocation failed): leave no process and no zombie behind.
    if (pid_ > 0 && !leader_reaped_) {
      ::killpg(pid_, SIGKILL);
      std::error_code ignored;
      child_.wait(ignored);
      while (::waitpid(-pid_, nullptr, 0) > 0) {
      }
    }
  }

  ProcessResult run(const std::function<void(int)>& on_started) {
    const auto start = steady_clock::now();
    execute(on_started);
    result_.duration = std::chrono::duration_cast<milliseconds>(steady_clock::now() - start);
    return std::move(result_);
  }

 private:
  void execute(const std::function<void(int)>& on_started) {
    if (spec_.argv.empty()) {
      result_.spawn_error = "empty argv";
      return;
    }
    if (cancel_ != nullptr && cancel_->cancelled()) {
      result_.cancelled = true;
      result_.spawn_error = "cancelled before start";
      return;
    }
    if (sigchldIgnored()) {
      result_.spawn_error = "SIGCHLD is ignored in the agent: exit statuses cannot be collected";
      return;
    }
    if (!spec_.working_dir.empty()) {
      struct stat st {};
      if (::stat(spec_.working_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
        result_.spawn_error = "no such directory: " + spec_.working_dir;
        return;
      }
    }
    std::string error;
    std::string program = resolveProgram(spec_, &error);
    if (program.empty()) {
      result_.spawn_error = error;
      return;
    }
    if (!spawn(program)) return;

    result_.started = true;
    result_.pid = pid_;
    if (on_started) on_started(pid_);

    std::optional<SigpipeBlock> sigpipe_block;
    if (stdin_) {
      sigpipe_block.emplace();
      asio::async_write(*stdin_, asio::buffer(spec_.stdin_data),
                        [this](const boost::system::error_code&, std::size_t) {
                          boost::system::error_code ignored;
                          stdin_->close(ignored);
                        });
    }
    readMore(out_);
    readMore(err_);
    deadline_.expires_after(spec_.timeout);
    deadline_.async_wait([this](const boost::system::error_code& ec) {
      if (ec || leader_reaped_ || result_.cancelled) return;
      result_.timed_out = true;
      terminateGroup();
    });
    scheduleTick(kMinPoll);
    ctx_.run();
    collectStatus();
  }

  bool spawn(const std::string& program) {
    // Everything the child needs is prepared here: it must not allocate after fork.
    std::vector<std::string> env_entries;
    env_entries.reserve(spec_.env.size());
    for (const auto& [name, value] : spec_.env) env_entries.push_back(name + "=" + value);
    std::vector<char*> envp;
    for (std::string& entry : env_entries) envp.push_back(entry.data());
    envp.push_back(nullptr);
    std::vector<std::string> argv_copy = spec_.argv;
    std::vector<char*> argv;
    for (std::string& arg : argv_copy) argv.push_back(arg.data());
    argv.push_back(nullptr);
    std::vector<std::string> args(spec_.argv.begin() + 1, spec_.argv.end());

    rlimit files{};
    ::getrlimit(RLIMIT_NOFILE, &files);
    pid_t forked = -1;
    StepChildSetup setup;
    setup.envp = envp.data();
    setup.argv = argv.data();
    setup.working_dir = spec_.working_dir.empty() ? nullptr : spec_.working_dir.c_str();
    setup.max_fd = static_cast<int>(std::min<rlim_t>(files.rlim_cur, 1 << 20));
    setup.spawned_pid = &forked;

    std::error_code ec;
    try {
      out_.pipe.emplace(ctx_);
      err_.pipe.emplace(ctx_);
      if (!spec_.stdin_data.empty()) {
        stdin_.emplace(ctx_);
        child_ = bp::child(bp::exe(program), bp::args(args), bp::std_out > *out_.pipe,
                           bp::std_err > *err_.pipe, bp::std_in < *stdin_, setup, ec);
      } else {
        child_ = bp::child(bp::exe(program), bp::args(args), bp::std_out > *out_.pipe,
                           bp::std_err > *err_.pipe, bp::std_in < bp::null, setup, ec);
      }
    } catch (const std::exception& e) {  // pipe creation: e.g. out of file descriptors
      result_.spawn_error = std::string("cannot start ") + spec_.argv.front() + ": " + e.what();
      reapFailedSpawn(forked);
      return false;
    }
    if (ec) {
      if (ec.value() == ENOENT) {
        result_.spawn_error = "no such file: " + spec_.argv.front();
      } else {
        result_.spawn_error = "cannot start " + spec_.argv.front() + ": " + ec.message();
      }
      reapFailedSpawn(forked);
      return false;
    }
    pid_ = child_.id();
    out_.open = err_.open = true;
    return true;
  }

  // A child whose exec failed has already exited: reap it so that no zombie is left (trap 3).
  static void reapFailedSpawn(pid_t forked) {
    if (forked <= 0) return;
    while (::waitpid(forked, nullptr, 0) == -1 && errno == EINTR) {
    }
  }

  void readMore(Stream& stream) {
    stream.pipe->async_read_some(
        asio::buffer(stream.chunk),
        [this, &stream](const boost::system::error_code& ec, std::size_t n) {
          if (n > 0) {
            stream.append(stream.chunk.data(), n);
            if (spec_.on_output) spec_.on_output(&stream == &err_, stream.chunk.data(), n);
          }
          if (!ec) {
            readMore(stream);
            return;
          }
          stream.open = false;
          boost::system::error_code ignored;
          stream.pipe->close(ignored);
          // Both pipes closed usually means the child is exiting: look again soon.
          if (!out_.open && !err_.open && !leader_reaped_) scheduleTick(kMinPoll);
          stopIfDone();
        });
  }

  void scheduleTick(milliseconds delay) {
    poll_ = delay;
    tick_.expires_after(delay);  // cancels a pending wait
    tick_.async_wait([this](const boost::system::error_code& ec) {
      if (ec) return;
      tick();
    });
  }

  void tick() {
    if (!leader_reaped_ && !result_.cancelled && !result_.timed_out && cancel_ != nullptr &&
        cancel_->cancelled()) {
      result_.cancelled = true;
      terminateGroup();
    }
    if (!leader_reaped_) {
      if (leaderExited()) {
        std::error_code ec;
        child_.wait(ec);  // returns at once: the leader has exited
        leader_reaped_ = true;
        wait_error_ = ec;
      } else {
        reapExitedMembersOtherThanLeader();
      }
    }
    if (leader_reaped_) {
      while (::waitpid(-pid_, nullptr, WNOHANG) > 0) {
      }
      // Safe to signal by pgid: the group (hence its id) exists while kill() succeeds.
      group_alive_ = ::kill(-pid_, 0) == 0;
      if (group_alive_) terminateGroup();  // leftovers of a step whose main process ended
      if (group_alive_ && give_up_on_group_at_ && steady_clock::now() >= *give_up_on_group_at_) {
        group_alive_ = false;  // unreaped zombies or unkillable (D state) members
        closeStreams();
      }
    }
    if (leader_reaped_ && !group_alive_ && (out_.open || err_.open)) {
      const auto now = steady_clock::now();
      if (!linger_until_) {
        linger_until_ = now + kEscapedWriterLinger;
      } else if (now >= *linger_until_) {
        closeStreams();
      }
    }
    if (stopIfDone()) return;
    scheduleTick(std::min(poll_ * 2, kMaxPoll));
  }

  bool leaderExited() const {
    siginfo_t info{};
    return ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
           info.si_pid == pid_;
  }

  // Reaps group members that were re-parented to us and have exited, while the leader runs;
  // the leader itself is reaped only by child_.wait().
  void reapExitedMembersOtherThanLeader() {
    for (int i = 0; i < 1000; ++i) {
      siginfo_t info{};
      if (::waitid(P_PGID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0 ||
          info.si_pid == 0 || info.si_pid == pid_) {
        return;
      }
      ::waitpid(info.si_pid, nullptr, WNOHANG);
    }
  }

  // SIGTERM to the whole group now, SIGKILL after kill_grace. Idempotent.
  void terminateGroup() {
    if (terminating_) return;
    terminating_ = true;
    ::killpg(pid_, SIGTERM);
    ::killpg(pid_, SIGCONT);  // a stopped process acts on SIGTERM only once continued
    grace_.expires_after(spec_.kill_grace);
    grace_.async_wait([this](const boost::system::error_code& ec) {
      if (ec) return;
      // Once the leader is reaped the pgid could in theory be reused: check it still exists.
      if (!leader_reaped_ || ::kill(-pid_, 0) == 0) ::killpg(pid_, SIGKILL);
      give_up_on_group_at_ = steady_clock::now() + std::max(spec_.kill_grace, kMinSettleAfterKill);
    });
  }

  void closeStreams() {
    for (Stream* stream : {&out_, &err_}) {
      if (!stream->open) continue;
      stream->open = false;
      boost::system::error_code ignored;
      stream->pipe->close(ignored);
    }
  }

  bool stopIfDone() {
    if (!leader_reaped_ || group_alive_ || out_.open || err_.open) return false;
    ctx_.stop();
    return true;
  }

  void collectStatus() {
    if (wait_error_) {
      result_.spawn_error = "exit status lost: " + wait_error_.message();
    } else {
      int status = child_.native_exit_code();
      if (WIFEXITED(status)) {
        result_.exit_code = WEXITSTATUS(status);
      } else if (WIFSIGNALED(status)) {
        result_.term_signal = WTERMSIG(status);
      }
    }
    result_.stdout_tail = out_.takeTail();
    result_.stdout_full = std::move(out_.head);
    result_.stderr_tail = err_.takeTail();
    result_.stdout_bytes = out_.bytes;
    result_.stderr_bytes = err_.bytes;
  }

  const ProcessSpec& spec_;
  const CancelToken* cancel_;
  ProcessResult result_;
  // The io_context is declared before every I/O object so that it is destroyed last.
  asio::io_context ctx_;
  Stream out_;
  Stream err_;
  std::optional<bp::async_pipe> stdin_;
  asio::steady_timer deadline_{ctx_};
  asio::steady_timer grace_{ctx_};
  asio::steady_timer tick_{ctx_};
  milliseconds poll_{kMinPoll};
  bp::child child_;
  pid_t pid_ = 0;
  bool leader_reaped_ = false;
  std::error_code wait_error_;
  bool group_alive_ = true;
  bool terminating_ = false;
  std::optional<steady_clock::time_point> linger_until_;
  std::optional<steady_clock::time_point> give_up_on_group_at_;
};

class BoostProcessRunner final : public ProcessRunner {
 public:
  ProcessResult run(const ProcessSpec& spec, const CancelToken* cancel,
                    std::function<void(int pid)> on_started) override {
    StepRun step(spec, cancel);
    return step.run(on_started);
  }
};

}  // namespace

std::unique_ptr<ProcessRunner> makeBoostProcessRunner() {
  return std::make_unique<BoostProcessRunner>();
}

bool becomeSubreaper() {
  static const bool kBecame = [] {
    if (sigchldIgnored()) {
      struct sigaction dfl {};
      dfl.sa_handler = SIG_DFL;
      sigemptyset(&dfl.sa_mask);
      ::sigaction(SIGCHLD, &dfl, nullptr);
    }
    return ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0;
  }();
  return kBecame;
}

}  // namespace kiln::exec
