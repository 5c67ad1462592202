#include "common/failure_log.h"

namespace kiln {

void FailureLog::note(const Error& e, const std::string& what) {
  const std::string line = what + ": " + e.message;
  {
    std::lock_guard lock(mu_);
    const auto now = clock_.now();
    auto [it, fresh] = logged_at_.try_emplace(line, now);
    if (!fresh && now - it->second < every_) return;
    it->second = now;
    // Bounded: past this many distinct lines, forgetting them costs only a repeated line.
    if (logged_at_.size() > 10000) logged_at_.clear();
  }
  if (e.code == ErrorCode::kConflict)
    log_.info(line);
  else
    log_.error(line);
}

}  // namespace kiln
