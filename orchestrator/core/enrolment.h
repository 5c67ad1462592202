#pragma once
// Who may enrol an agent as which host (POST /agents/register): the one rule, pure. The store
// reads the facts under the host's and the enrolment token's row locks and writes only what an
// allowed enrolment writes (orchestrator/db/pg_run_store.cc, enrollAgent).

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace kiln::core {

struct EnrolmentFacts {
  std::string host;  // the host the registration names
  bool host_exists = false;
  // The enrolment token's binding: a host's own token (POST /hosts/{id}/enrolment-tokens), or
  // none for a fleet-wide token (role enroll, POST /tokens).
  std::optional<std::string> token_host;
  bool token_spent = false;    // a host's token already used by a registration
  bool token_expired = false;  // past its expires_at
  bool reenroll = false;       // a host's token issued to replace its live agent
  // The host has an agent token that is neither revoked nor expired: an agent is enrolled.
  std::optional<std::string> live_agent_token;
};

// Ok, or the refusal:
// - kNotFound: no such host;
// - kUnauthenticated: a host's token already spent, or expired;
// - kPermissionDenied: a host's token naming another host;
// - kConflict: the host has a live agent and the token is not a re-enrolment token of that host
//   (a fleet-wide token only enrols hosts without one): no registration takes over a live
//   agent; an operator re-enrols the host explicitly.
Status decideEnrolment(const EnrolmentFacts& f);

// Issue 33 (agent version skew): the leading dotted numbers of a version ("0.10.2-vfleet" is
// {0, 10, 2}); nullopt when it does not start with one.
std::optional<std::vector<long>> versionNumbers(const std::string& version);
// Whether kilnd (--min-agent-version `min`) takes an agent of `version`: any when `min` is empty;
// else one whose numbers are at least min's (missing trailing numbers count as 0). kConflict
// naming both, and what to do, otherwise (a version without numbers included).
Status acceptAgentVersion(const std::string& version, const std::string& min);

}  // namespace kiln::core
