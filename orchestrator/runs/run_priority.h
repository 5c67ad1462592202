#pragma once
// Priority by purpose (issue 35): a job waits for nothing Kiln does for itself. Where work of
// several runs waits for the same resource (the agent gateway's report transactions), it is
// taken class by class: pre-job checks first (a job's prolog is waiting), then quarantine and
// repair validation (hosts on their way back to the pool), then maintenance (rollouts, manual
// runs), then burn-in (new hardware, no one waiting). The lower classes are not starved: the
// gateway takes any report that has waited its starvation bound before newer ones of any class
// (AgentGatewayOptions::starvation_bound). Pure.

#include <string_view>

namespace kiln::runs {

enum class Priority : int { kPreJob = 0, kRepair = 1, kMaintenance = 2, kBurnIn = 3 };
inline constexpr int kPriorities = 4;

// A run's class from its purpose (run_service.h's runPurposes); an unknown purpose is
// maintenance.
inline Priority purposePriority(std::string_view purpose) {
  if (purpose == "pre_job") return Priority::kPreJob;
  if (purpose == "quarantine") return Priority::kRepair;
  if (purpose == "burn_in") return Priority::kBurnIn;
  return Priority::kMaintenance;
}

inline const char* priorityName(Priority p) {
  switch (p) {
    case Priority::kPreJob:
      return "pre_job";
    case Priority::kRepair:
      return "repair";
    case Priority::kMaintenance:
      return "maintenance";
    case Priority::kBurnIn:
      return "burn_in";
  }
  return "maintenance";
}

}  // namespace kiln::runs
