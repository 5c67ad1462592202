#include "common/exec/fake_process_runner.h"

#include <csignal>
#include <utility>

namespace kiln::exec {
namespace {

// Mirrors the real runner, which keeps only the last output_cap bytes of each stream and, when
// asked, the first parse_capture_cap bytes of stdout. A scripted stdout_full wins over the
// scripted tail as the "whole" stdout.
ProcessResult capped(ProcessResult result, const ProcessSpec& spec) {
  const std::size_t cap = spec.output_cap;
  if (spec.parse_capture_cap == 0) {
    result.stdout_full.clear();
  } else {
    if (result.stdout_full.empty()) result.stdout_full = result.stdout_tail;
    if (result.stdout_full.size() > spec.parse_capture_cap) {
      result.stdout_full.resize(spec.parse_capture_cap);
    }
  }
  for (std::string* tail : {&result.stdout_tail, &result.stderr_tail}) {
    if (tail->size() > cap) tail->erase(0, tail->size() - cap);
  }
  return result;
}

}  // namespace

void FakeProcessRunner::script(const std::string& program, ProcessResult result) {
  std::lock_guard lock(mutex_);
  by_program_[program] = std::move(result);
}

void FakeProcessRunner::scriptArgv(const std::vector<std::string>& argv, ProcessResult result) {
  std::lock_guard lock(mutex_);
  by_argv_[argv] = std::move(result);
}

void FakeProcessRunner::scriptSequence(const std::string& program,
                                       std::vector<ProcessResult> results) {
  std::lock_guard lock(mutex_);
  sequences_[program] = std::move(results);
}

void FakeProcessRunner::scriptHandler(const std::string& program, Handler handler) {
  std::lock_guard lock(mutex_);
  handlers_[program] = std::move(handler);
}

ProcessResult FakeProcessRunner::run(const ProcessSpec& spec, const CancelToken* cancel,
                                     std::function<void(int pid)> on_started) {
  const std::string program = spec.argv.empty() ? std::string() : spec.argv.front();
  ProcessResult result;
  Handler handler;
  int pid = 0;
  {
    std::lock_guard lock(mutex_);
    specs_.push_back(spec);
    if (cancel != nullptr && cancel->cancelled()) {
      result.cancelled = true;
      result.spawn_error = "cancelled before start";
      return result;
    }
    if (auto h = handlers_.find(program); h != handlers_.end()) {
      handler = h->second;
    } else if (auto a = by_argv_.find(spec.argv); a != by_argv_.end()) {
      result = a->second;
    } else if (auto s = sequences_.find(program); s != sequences_.end() && !s->second.empty()) {
      result = s->second.front();
      if (s->second.size() > 1) s->second.erase(s->second.begin());
    } else if (auto p = by_program_.find(program); p != by_program_.end()) {
      result = p->second;
    } else {
      result.spawn_error = "no such file: " + program;
      return result;
    }
    pid = next_pid_++;
  }
  // The handler and on_started run unlocked: they may block or call back into the fake.
  if (handler) {
    if (on_started) on_started(pid);
    result = handler(spec, cancel);
    if (result.started && result.pid == 0) result.pid = pid;
    return capped(std::move(result), spec);
  }
  if (result.started) {
    if (result.pid == 0) result.pid = pid;
    if (on_started) on_started(result.pid);
  }
  return capped(std::move(result), spec);
}

std::vector<ProcessSpec> FakeProcessRunner::specs() const {
  std::lock_guard lock(mutex_);
  return specs_;
}

std::size_t FakeProcessRunner::runCount() const {
  std::lock_guard lock(mutex_);
  return specs_.size();
}

std::vector<std::vector<std::string>> FakeProcessRunner::argvs() const {
  std::lock_guard lock(mutex_);
  std::vector<std::vector<std::string>> out;
  out.reserve(specs_.size());
  for (const ProcessSpec& spec : specs_) out.push_back(spec.argv);
  return out;
}

ProcessResult FakeProcessRunner::exited(int exit_code, std::string stdout_text,
                                        std::string stderr_text) {
  ProcessResult r;
  r.started = true;
  r.exit_code = exit_code;
  r.stdout_bytes = stdout_text.size();
  r.stderr_bytes = stderr_text.size();
  r.stdout_tail = std::move(stdout_text);
  r.stderr_tail = std::move(stderr_text);
  return r;
}

ProcessResult FakeProcessRunner::timedOut() {
  ProcessResult r;
  r.started = true;
  r.timed_out = true;
  r.term_signal = SIGTERM;
  return r;
}

}  // namespace kiln::exec
