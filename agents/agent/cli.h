#pragma once
// kiln-agent's command line: `run` flags (also from KILN_AGENT_* environment variables; a flag
// wins over its variable), `parse FORMAT [FILE]`, `--help`. Pure: the environment is injected.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace kiln::agent {

struct RunOptions {
  std::string url;                        // --url / KILN_AGENT_URL (required)
  std::string host;                       // --host / KILN_AGENT_HOST (default: hostname)
                                          // --runner NAME: an out-of-band runner, host = "runner:NAME"
  std::string state_dir;                  // --state-dir / KILN_AGENT_STATE_DIR (required)
  std::string enroll_token_file;          // --enroll-token-file
  // --allowed-executables FILE: the only executables steps may run on this host
  // (common/executable_allowlist.h); empty: any kilnd sends.
  std::string allowed_executables;
  std::string ca_file;                    // --ca-file
  // --client-cert FILE --client-key FILE: this host's TLS client certificate (mutual TLS: kilnd
  // --agent-client-ca), whose CN or a DNS name is the host.
  std::string client_cert, client_key;
  std::string inventory_command = "kiln-inventory";  // --inventory-command (split on blanks)
  std::string boot_id_file;               // --boot-id-file (then the inventory's boot_id is ignored)
  int poll_wait_s = 25;                   // --poll-wait 0..60
  std::vector<std::string> env_allow;     // --env-allow NAME[,NAME...] (repeatable)
  std::vector<std::string> path_prepend;  // --path-prepend DIR (repeatable; ':' lists too)
  std::string log_level = "info";         // --log-level trace|debug|info|warn|error|off
  int stop_grace_s = 30;                  // --stop-grace S
  // --live-output-interval S: a running step's output goes to kilnd at most every S seconds
  // (issue 18; more hosts, fewer writes: raise it); 0 = not at all.
  int live_output_interval_s = 1;
  // Artifacts (issue 31, agents/agent/artifacts.h).
  std::string artifact_cache;                 // --artifact-cache DIR (default STATE_DIR/artifacts)
  std::uint64_t artifact_cache_max = 64ull << 30;  // --artifact-cache-max BYTES (K, M, G, T suffixes)
  std::uint64_t artifact_rate_limit = 0;      // --artifact-rate-limit BYTES/s (suffixes; 0: none)
  std::string artifact_ca_bundle;             // --artifact-ca-bundle FILE (https)
  std::vector<std::pair<std::string, std::string>> artifact_mirrors;  // --artifact-mirror PREFIX=MIRROR (repeatable)
  std::string trusted_keys;                   // --trusted-keys FILE (gpg --export keyring)
};

inline constexpr const char* kUsage =
    "usage: kiln-agent run --url URL [--host HOST | --runner NAME] --state-dir DIR [--enroll-token-file F]\n"
    "                      [--ca-file F] [--client-cert F --client-key F]\n"
    "                      [--inventory-command CMD] [--boot-id-file F]\n"
    "                      [--poll-wait S] [--env-allow NAME[,NAME]]... [--path-prepend DIR]...\n"
    "                      [--stop-grace S] [--log-level trace|debug|info|warn|error|off]\n"
    "                      [--live-output-interval S (0: off)] [--allowed-executables FILE]\n"
    "                      [--artifact-cache DIR] [--artifact-cache-max BYTES]\n"
    "                      [--artifact-rate-limit BYTES/S] [--artifact-ca-bundle FILE]\n"
    "                      [--artifact-mirror PREFIX=MIRROR]... [--trusted-keys FILE]\n"
    "       kiln-agent parse FORMAT [FILE]   print a tool's output as normalized JSON\n"
    "       kiln-agent --help\n"
    "Every run flag can also come from the environment: --state-dir from KILN_AGENT_STATE_DIR,\n"
    "and so on (KILN_AGENT_ + the flag in upper case, '-' as '_'); a flag wins over its\n"
    "variable. --env-allow adds names (a trailing '*' is a prefix) to the environment steps\n"
    "inherit (PATH HOME LANG LC_ALL TZ KILN_HWSIM_*); --path-prepend puts DIR before the\n"
    "agent's PATH in the steps' PATH. --allowed-executables lists the only executables steps\n"
    "may run here (a name or an absolute path a line): any other step is refused unrun.\n"
    "Artifacts a step needs are fetched into --artifact-cache (default STATE_DIR/artifacts,\n"
    "at most --artifact-cache-max, e.g. 200G; least recently used evicted), from the first\n"
    "--artifact-mirror whose PREFIX starts the URL, then the URL itself, resuming broken\n"
    "downloads, at most --artifact-rate-limit (e.g. 100M), and checked against their sha256\n"
    "before any step uses them. With --trusted-keys (a keyring as `gpg --export` writes it)\n"
    "every artifact must also be signed by one of those keys (checked with gpgv).\n"
    "--runner NAME makes this agent an out-of-band runner (it polls as runner:NAME and runs the\n"
    "steps about the BMCs of the pods whose management block names it); its agent token comes\n"
    "from an admin (POST /api/v1/tokens {role: agent, runner: NAME}) in STATE_DIR/agent_token.\n";

// Parses the arguments after `run`. `getenv` looks up KILN_AGENT_* variables; `hostname` is
// the default --host. kInvalidArgument with a one-line message on bad usage.
Result<RunOptions> parseRunOptions(const std::vector<std::string>& args,
                                   const std::function<std::optional<std::string>(const std::string&)>& getenv,
                                   const std::string& hostname);

}  // namespace kiln::agent
