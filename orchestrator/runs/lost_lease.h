#pragma once
// A step whose report never came within its lease (the agent died, or the report waited past
// the lease in an overloaded kilnd): the reason the engine records, and the rule that reads it.
// Such a host's verdict says nothing about its health: a pre-job check does not fail it out of
// the job pool for that (group_step.cc), the run's summary marks it `lost` (run_service.cc),
// and kilnctl slurm prolog treats a check that failed only so as no verdict. A dead host is
// caught by its heartbeats (--unreachable-after), not by a lost lease. Issue 35: an overloaded
// kilnd once failed 761 healthy hosts of a 8,192-host check this way. Pure.

#include <string>
#include <string_view>
#include <vector>

namespace kiln::runs {

inline constexpr std::string_view kLostLeaseReason = "no report from the agent within the lease";

// True when `failures` (a host's, each "STEP: REASON") is not empty and every one is a lost
// lease.
inline bool onlyLostLeases(const std::vector<std::string>& failures) {
  if (failures.empty()) return false;
  for (const auto& f : failures) {
    const auto colon = f.find(": ");
    if (colon == std::string::npos || std::string_view(f).substr(colon + 2).rfind(kLostLeaseReason, 0) != 0)
      return false;
  }
  return true;
}

}  // namespace kiln::runs
