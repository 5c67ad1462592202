#include "orchestrator/core/enrolment.h"

namespace kiln::core {

Status decideEnrolment(const EnrolmentFacts& f) {
  if (f.token_host && (f.token_spent || f.token_expired))
    return Error(ErrorCode::kUnauthenticated, std::string("this enrolment token was ") +
                                                  (f.token_spent ? "already used" : "valid only until its expiry") +
                                                  ": ask an operator for a new one (kilnctl hosts enrol-token " +
                                                  *f.token_host + ")");
  if (f.token_host && *f.token_host != f.host)
    return Error(ErrorCode::kPermissionDenied, "this enrolment token is for host " + *f.token_host + ", not " + f.host)
        .with("host", f.host);
  if (!f.host_exists) return Error(ErrorCode::kNotFound, "no host '" + f.host + "' in the fleet");
  if (f.live_agent_token && !(f.token_host && f.reenroll))
    return Error(ErrorCode::kConflict, "host " + f.host + " already has an enrolled agent (token " +
                                           *f.live_agent_token +
                                           "): a registration does not replace it; an operator re-enrols the host "
                                           "with a re-enrolment token (kilnctl hosts enrol-token " +
                                           f.host + " --reenroll)")
        .with("host", f.host)
        .with("agent_token", *f.live_agent_token);
  return Ok{};
}

}  // namespace kiln::core
