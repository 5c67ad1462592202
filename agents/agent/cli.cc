#include "agents/agent/cli.h"

#include <map>
#include <set>
#include <sstream>

#include "common/runner_key.h"

namespace kiln::agent {
namespace {

std::vector<std::string> splitList(const std::string& value, char sep) {
  std::vector<std::string> out;
  std::stringstream in(value);
  for (std::string item; std::getline(in, item, sep);) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

Result<int> intValue(const std::string& flag, const std::string& value, int lo, int hi) {
  std::size_t used = 0;
  int v = 0;
  try {
    v = std::stoi(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != value.size() || value.empty() || v < lo || v > hi) {
    return invalidArgument(flag + " wants a whole number from " + std::to_string(lo) + " to " +
                           std::to_string(hi) + ", not '" + value + "'");
  }
  return v;
}

// "200G", "512M", "100k", "1048576": bytes (powers of 1024).
Result<std::uint64_t> byteValue(const std::string& flag, const std::string& value) {
  std::size_t used = 0;
  unsigned long long n = 0;
  try {
    n = std::stoull(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::uint64_t unit = 1;
  if (used > 0 && used + 1 == value.size()) {
    switch (std::toupper(static_cast<unsigned char>(value.back()))) {
      case 'K': unit = 1ull << 10; break;
      case 'M': unit = 1ull << 20; break;
      case 'G': unit = 1ull << 30; break;
      case 'T': unit = 1ull << 40; break;
      default: used = 0;
    }
    if (used > 0) ++used;
  }
  if (used == 0 || used != value.size() || value[0] == '-' || n > (~0ull) / unit)
    return invalidArgument(flag + " wants a number of bytes (K, M, G, T suffixes allowed), not '" + value + "'");
  return static_cast<std::uint64_t>(n) * unit;
}

std::string envName(const std::string& flag) {
  std::string name = "KILN_AGENT_";
  for (char c : flag.substr(2)) name += c == '-' ? '_' : static_cast<char>(std::toupper(c));
  return name;
}

}  // namespace

Result<RunOptions> parseRunOptions(
    const std::vector<std::string>& args,
    const std::function<std::optional<std::string>(const std::string&)>& getenv,
    const std::string& hostname) {
  static const std::vector<std::string> kFlags = {
      "--url",           "--host",         "--state-dir",         "--enroll-token-file",
      "--ca-file",       "--inventory-command", "--boot-id-file", "--poll-wait",
      "--env-allow",     "--path-prepend", "--log-level",         "--stop-grace",
      "--live-output-interval", "--allowed-executables", "--artifact-cache", "--artifact-cache-max",
      "--artifact-rate-limit", "--artifact-ca-bundle", "--artifact-mirror", "--trusted-keys", "--client-cert",
      "--client-key",    "--runner"};
  const std::set<std::string> known(kFlags.begin(), kFlags.end());
  // Values by flag, in order; environment first so that flags override it.
  std::map<std::string, std::vector<std::string>> values;
  for (const std::string& flag : kFlags) {
    if (auto v = getenv(envName(flag)); v && !v->empty()) values[flag] = {*v};
  }
  std::map<std::string, std::vector<std::string>> from_flags;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i];
    std::optional<std::string> value;
    if (auto eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    }
    if (!known.count(flag)) return invalidArgument("unknown argument '" + args[i] + "'");
    if (!value) {
      if (i + 1 >= args.size()) return invalidArgument(flag + " needs a value");
      value = args[++i];
    }
    from_flags[flag].push_back(*value);
  }
  for (auto& [flag, list] : from_flags) values[flag] = list;

  auto last = [&](const std::string& flag) -> std::optional<std::string> {
    auto it = values.find(flag);
    if (it == values.end() || it->second.empty()) return std::nullopt;
    return it->second.back();
  };
  RunOptions o;
  o.url = last("--url").value_or("");
  o.host = last("--host").value_or(hostname);
  o.state_dir = last("--state-dir").value_or("");
  o.enroll_token_file = last("--enroll-token-file").value_or("");
  o.allowed_executables = last("--allowed-executables").value_or("");
  o.ca_file = last("--ca-file").value_or("");
  o.client_cert = last("--client-cert").value_or("");
  o.client_key = last("--client-key").value_or("");
  if (o.client_cert.empty() != o.client_key.empty()) return invalidArgument("--client-cert and --client-key go together");
  o.inventory_command = last("--inventory-command").value_or(o.inventory_command);
  o.boot_id_file = last("--boot-id-file").value_or("");
  o.log_level = last("--log-level").value_or(o.log_level);
  for (const std::string& v : values["--env-allow"]) {
    for (std::string& name : splitList(v, ',')) o.env_allow.push_back(name);
  }
  for (const std::string& v : values["--path-prepend"]) {
    for (std::string& dir : splitList(v, ':')) o.path_prepend.push_back(dir);
  }
  o.artifact_cache = last("--artifact-cache").value_or("");
  o.artifact_ca_bundle = last("--artifact-ca-bundle").value_or("");
  o.trusted_keys = last("--trusted-keys").value_or("");
  if (auto v = last("--artifact-cache-max")) {
    auto n = byteValue("--artifact-cache-max", *v);
    if (!n) return n.error();
    if (*n < (1ull << 20)) return invalidArgument("--artifact-cache-max must be at least 1M");
    o.artifact_cache_max = *n;
  }
  if (auto v = last("--artifact-rate-limit")) {
    auto n = byteValue("--artifact-rate-limit", *v);
    if (!n) return n.error();
    o.artifact_rate_limit = *n;
  }
  for (const std::string& v : values["--artifact-mirror"]) {
    const auto eq = v.find('=');
    const std::string prefix = eq == std::string::npos ? "" : v.substr(0, eq);
    const std::string mirror = eq == std::string::npos ? "" : v.substr(eq + 1);
    const auto is_url = [](const std::string& u) {
      return (u.rfind("http://", 0) == 0 || u.rfind("https://", 0) == 0) && u.find_first_of(" \t\n") == std::string::npos;
    };
    if (!is_url(prefix) || !is_url(mirror))
      return invalidArgument("--artifact-mirror wants PREFIX=MIRROR, both http(s) URLs (https://artifacts.example/=http://mirror-b01/), not '" + v + "'");
    o.artifact_mirrors.emplace_back(prefix, mirror);
  }
  if (auto v = last("--poll-wait")) {
    auto n = intValue("--poll-wait", *v, 0, 60);
    if (!n) return n.error();
    o.poll_wait_s = *n;
  }
  if (auto v = last("--stop-grace")) {
    auto n = intValue("--stop-grace", *v, 0, 3600);
    if (!n) return n.error();
    o.stop_grace_s = *n;
  }
  if (auto v = last("--live-output-interval")) {
    auto n = intValue("--live-output-interval", *v, 0, 3600);
    if (!n) return n.error();
    o.live_output_interval_s = *n;
  }

  if (o.url.empty()) return invalidArgument("--url is required (or KILN_AGENT_URL)");
  if (o.url.rfind("http://", 0) != 0 && o.url.rfind("https://", 0) != 0) {
    return invalidArgument("--url must start with http:// or https://, not '" + o.url + "'");
  }
  while (o.url.size() > 1 && o.url.back() == '/') o.url.pop_back();
  if (o.state_dir.empty()) return invalidArgument("--state-dir is required (or KILN_AGENT_STATE_DIR)");
  if (auto runner = last("--runner")) {
    // An out-of-band runner (issue 32, common/runner_key.h): it polls as runner:NAME.
    if (last("--host")) return invalidArgument("give --host or --runner, not both");
    if (!validRunnerName(*runner))
      return invalidArgument("--runner '" + *runner + "': expected 1 to 63 of a-z 0-9 . _ -, starting with a letter or digit");
    o.host = runnerKey(*runner);
  } else if (o.host.empty()) {
    return invalidArgument("--host is required: the hostname is unknown");
  }
  for (char c : isRunnerKey(o.host) ? std::string() : o.host) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) {
      return invalidArgument("--host '" + o.host + "' has a character other than A-Z a-z 0-9 - _ .");
    }
  }
  if (o.inventory_command.find_first_not_of(" \t") == std::string::npos) {
    return invalidArgument("--inventory-command is empty");
  }
  static const std::set<std::string> kLevels = {"trace", "debug", "info", "warn", "error", "off"};
  if (!kLevels.count(o.log_level)) {
    return invalidArgument("--log-level must be trace, debug, info, warn, error or off, not '" +
                           o.log_level + "'");
  }
  return o;
}

}  // namespace kiln::agent
