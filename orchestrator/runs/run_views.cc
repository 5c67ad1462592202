#include "orchestrator/runs/run_views.h"

namespace kiln::runs {

std::optional<RunRollout> rolloutOf(const RunRow& run) {
  if (run.purpose != "rollout" || run.owner.empty()) return std::nullopt;
  std::vector<std::string> parts;
  std::size_t from = 0;
  for (;;) {
    const std::size_t slash = run.owner.find('/', from);
    parts.push_back(run.owner.substr(from, slash == std::string::npos ? std::string::npos : slash - from));
    if (slash == std::string::npos) break;
    from = slash + 1;
  }
  if (parts.size() != 4 || parts[0].empty()) return std::nullopt;
  int attempt = 0;
  for (char c : parts[3]) {
    if (c < '0' || c > '9' || attempt > 100000) {
      attempt = 0;
      break;
    }
    attempt = attempt * 10 + (c - '0');
  }
  RunRollout r{parts[0], parts[1], parts[2], std::nullopt};
  if (attempt > 0) r.attempt = attempt;
  return r;
}

}  // namespace kiln::runs
