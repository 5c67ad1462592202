#include "common/exec/process_runner.h"

namespace kiln::exec {

std::string describeFailure(const ProcessResult& r, std::chrono::milliseconds timeout) {
  std::string why = !r.started          ? "did not start: " + r.spawn_error
                    : r.timed_out        ? "timed out after " + std::to_string(timeout.count()) + " ms"
                    : r.term_signal != 0 ? "killed by signal " + std::to_string(r.term_signal)
                                         : "exited " + std::to_string(r.exit_code);
  std::string err = r.stderr_tail;
  while (!err.empty() && (err.back() == '\n' || err.back() == '\r')) err.pop_back();
  if (const auto nl = err.rfind('\n'); nl != std::string::npos) err = err.substr(nl + 1);
  if (!err.empty()) why += ": " + err;
  return why;
}

}  // namespace kiln::exec
