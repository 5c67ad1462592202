#include "orchestrator/core/enrolment.h"

#include <algorithm>

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

std::optional<std::vector<long>> versionNumbers(const std::string& version) {
  std::vector<long> out;
  std::size_t i = 0;
  while (i < version.size() && out.size() < 8) {
    if (version[i] < '0' || version[i] > '9') break;
    long n = 0;
    std::size_t digits = 0;
    while (i < version.size() && version[i] >= '0' && version[i] <= '9' && digits < 9) {
      n = n * 10 + (version[i] - '0');
      ++i;
      ++digits;
    }
    out.push_back(n);
    if (i < version.size() && version[i] == '.' && i + 1 < version.size() && version[i + 1] >= '0' &&
        version[i + 1] <= '9')
      ++i;
    else
      break;
  }
  if (out.empty()) return std::nullopt;
  return out;
}

Status acceptAgentVersion(const std::string& version, const std::string& min) {
  if (min.empty()) return Ok{};
  const auto want = versionNumbers(min);
  const auto have = versionNumbers(version);
  bool ok = want && have;
  if (ok) {
    const std::size_t n = std::max(want->size(), have->size());
    for (std::size_t k = 0; k < n; ++k) {
      const long a = k < have->size() ? (*have)[k] : 0, b = k < want->size() ? (*want)[k] : 0;
      if (a != b) {
        ok = a > b;
        break;
      }
    }
  }
  if (ok) return Ok{};
  return Error(ErrorCode::kConflict, "kilnd accepts kiln-agent " + min + " or newer (--min-agent-version); this agent is " +
                                         (version.empty() ? std::string("of no stated version") : version) +
                                         ": upgrade the kiln-agent package on the host")
      .with("agent_version", version)
      .with("min_agent_version", min);
}

}  // namespace kiln::core
