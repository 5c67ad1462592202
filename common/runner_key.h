#pragma once
// An out-of-band runner's name on the agents' channel (issue 32). A runner is a kiln-agent on
// a management host that reaches a building's BMC network; it runs the steps about hosts' BMCs
// (workflow `target: bmc`, a reboot's power-cycle recovery) for the pods whose management block
// names it. On the agents' channel it is a worker like a host, under the key "runner:NAME":
// its token is bound to that key (POST /tokens {role: agent, runner: NAME}), it polls
// /agents/runner:NAME/work, and only it can take or report those steps. A host id never
// holds ':' (fleet names are [a-z0-9._-]), so the two kinds of key cannot meet. Pure.

#include <string>
#include <string_view>

namespace kiln {

inline constexpr std::string_view kRunnerKeyPrefix = "runner:";

inline bool isRunnerKey(std::string_view key) {
  return key.substr(0, kRunnerKeyPrefix.size()) == kRunnerKeyPrefix;
}
inline std::string runnerKey(std::string_view name) {
  return std::string(kRunnerKeyPrefix) + std::string(name);
}
// "" for a key that is not a runner's.
inline std::string runnerOfKey(std::string_view key) {
  return isRunnerKey(key) ? std::string(key.substr(kRunnerKeyPrefix.size())) : std::string();
}
// The key of whoever runs an assignment: the runner's when it has one, else its host's.
inline std::string workerKey(const std::string& host, const std::string& runner) {
  return runner.empty() ? host : runnerKey(runner);
}
// A runner's name: 1-63 of [a-z0-9._-], starting with a letter or digit (a fleet name).
inline bool validRunnerName(std::string_view name) {
  if (name.empty() || name.size() > 63) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!alnum && (i == 0 || (c != '.' && c != '_' && c != '-'))) return false;
  }
  return true;
}

}  // namespace kiln
