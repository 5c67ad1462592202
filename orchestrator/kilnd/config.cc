#include "orchestrator/kilnd/config.h"

#include "orchestrator/core/enrolment.h"
#include "orchestrator/retention/retention.h"

#include <sys/stat.h>
#include <unistd.h>

#include <yaml-cpp/yaml.h>

#include <functional>

namespace kiln::kilnd {
namespace {

struct Setting {
  const char* flag;  // --listen
  const char* env;   // KILN_LISTEN
  const char* key;   // listen (config file)
  bool is_bool;
  std::function<Status(Config&, const std::string&)> set;
};

Status setInt(int& field, const std::string& v, const char* name, int lo, int hi) {
  try {
    std::size_t used = 0;
    int n = std::stoi(v, &used);
    if (used != v.size() || n < lo || n > hi) throw std::out_of_range(v);
    field = n;
    return Ok{};
  } catch (...) {
    return invalidArgument(std::string(name) + " must be a whole number from " + std::to_string(lo) +
                           " to " + std::to_string(hi) + ", got '" + v + "'");
  }
}

Status setPositive(double& field, const std::string& v, const char* name, double hi) {
  try {
    std::size_t used = 0;
    double d = std::stod(v, &used);
    if (used != v.size() || !(d > 0) || d > hi) throw std::out_of_range(v);
    field = d;
    return Ok{};
  } catch (...) {
    return invalidArgument(std::string(name) + " must be a number above 0 and at most " + std::to_string(static_cast<int>(hi)) +
                           ", got '" + v + "'");
  }
}

std::vector<Setting> settings() {
  auto str = [](std::string Config::*field) {
    return [field](Config& c, const std::string& v) -> Status {
      c.*field = v;
      return Ok{};
    };
  };
  return {
      {"--listen", "KILN_LISTEN", "listen", false, str(&Config::listen)},
      {"--database-url", "KILN_DATABASE_URL", "database_url", false, str(&Config::database_url)},
      {"--admin-token-file", "KILN_ADMIN_TOKEN_FILE", "admin_token_file", false, str(&Config::admin_token_file)},
      {"--log-level", "KILN_LOG_LEVEL", "log_level", false,
       [](Config& c, const std::string& v) -> Status {
         for (const char* l : {"trace", "debug", "info", "warn", "error", "off"})
           if (v == l) {
             c.log_level = v;
             return Ok{};
           }
         return invalidArgument("--log-level must be trace, debug, info, warn, error or off");
       }},
      {"--log-format", "KILN_LOG_FORMAT", "log_format", false,
       [](Config& c, const std::string& v) -> Status {
         if (v != "text" && v != "json") return invalidArgument("--log-format must be text or json, got '" + v + "'");
         c.log_format = v;
         return Ok{};
       }},
      {"--tls-cert", "KILN_TLS_CERT", "tls_cert", false, str(&Config::tls_cert)},
      {"--tls-key", "KILN_TLS_KEY", "tls_key", false, str(&Config::tls_key)},
      {"--web-root", "KILN_WEB_ROOT", "web_root", false, str(&Config::web_root)},
      {"--allow-insecure-http", "KILN_ALLOW_INSECURE_HTTP", "allow_insecure_http", true,
       [](Config& c, const std::string& v) -> Status {
         c.allow_insecure_http = v == "1" || v == "true" || v == "yes";
         return Ok{};
       }},
      {"--workflows-dir", "KILN_WORKFLOWS_DIR", "workflows_dir", false, str(&Config::workflows_dir)},
      {"--workflow-executables", "KILN_WORKFLOW_EXECUTABLES", "workflow_executables", false,
       str(&Config::workflow_executables)},
      {"--trusted-keys", "KILN_TRUSTED_KEYS", "trusted_keys", false, str(&Config::trusted_keys)},
      {"--agent-client-ca", "KILN_AGENT_CLIENT_CA", "agent_client_ca", false, str(&Config::agent_client_ca)},
      {"--unreachable-after", "KILN_UNREACHABLE_AFTER", "unreachable_after", false,
       [](Config& c, const std::string& v) {
         return setInt(c.unreachable_after_s, v, "--unreachable-after", 5, 86400);
       }},
      {"--lease-grace", "KILN_LEASE_GRACE", "lease_grace", false,
       [](Config& c, const std::string& v) { return setInt(c.lease_grace_s, v, "--lease-grace", 1, 3600); }},
      {"--agent-token-ttl", "KILN_AGENT_TOKEN_TTL", "agent_token_ttl", false,
       [](Config& c, const std::string& v) {
         // 0: agent tokens do not expire; else at least 10 minutes, at most a year.
         if (v == "0") {
           c.agent_token_ttl_s = 0;
           return Status(Ok{});
         }
         return setInt(c.agent_token_ttl_s, v, "--agent-token-ttl", 600, 366 * 24 * 3600);
       }},
      {"--scheduler-hook", "KILN_SCHEDULER_HOOK", "scheduler_hook", false, str(&Config::scheduler_hook)},
      {"--scheduler", "KILN_SCHEDULER", "scheduler", false,
       [](Config& c, const std::string& v) -> Status {
         if (v != "none" && v != "hook" && v != "slurm")
           return invalidArgument("--scheduler must be none, hook or slurm, got '" + v + "'");
         c.scheduler = v;
         return Ok{};
       }},
      {"--slurm-node-name", "KILN_SLURM_NODE_NAME", "slurm_node_name", false, str(&Config::slurm_node_name)},
      {"--report-priority", "KILN_REPORT_PRIORITY", "report_priority", false,
       [](Config& c, const std::string& v) -> Status {
         if (v != "on" && v != "off") return invalidArgument("--report-priority must be on or off, got '" + v + "'");
         c.report_priority = v == "on";
         return Ok{};
       }},
      {"--slurm-interval", "KILN_SLURM_INTERVAL", "slurm_interval", false,
       [](Config& c, const std::string& v) { return setInt(c.slurm_interval_s, v, "--slurm-interval", 1, 3600); }},
      {"--slurm-on-jobs", "KILN_SLURM_ON_JOBS", "slurm_on_jobs", false,
       [](Config& c, const std::string& v) -> Status {
         if (v != "wait" && v != "requeue")
           return invalidArgument("--slurm-on-jobs must be wait or requeue, got '" + v + "'");
         c.slurm_on_jobs = v;
         return Ok{};
       }},
      {"--slurm-bin-dir", "KILN_SLURM_BIN_DIR", "slurm_bin_dir", false, str(&Config::slurm_bin_dir)},
      {"--slurm-timeout", "KILN_SLURM_TIMEOUT", "slurm_timeout", false,
       [](Config& c, const std::string& v) { return setInt(c.slurm_timeout_s, v, "--slurm-timeout", 1, 600); }},
      {"--reliability-target", "KILN_RELIABILITY_TARGET", "reliability_target", false,
       [](Config& c, const std::string& v) {
         return setPositive(c.reliability_target, v, "--reliability-target", 10000);
       }},
      {"--pod-p90-target", "KILN_POD_P90_TARGET", "pod_p90_target", false,
       [](Config& c, const std::string& v) {
         return setInt(c.pod_p90_target_s, v, "--pod-p90-target", 60, 7 * 86400);
       }},
      {"--threads", "KILN_THREADS", "threads", false,
       [](Config& c, const std::string& v) { return setInt(c.threads, v, "--threads", 1, 256); }},
      {"--db-pool", "KILN_DB_POOL", "db_pool", false,
       [](Config& c, const std::string& v) { return setInt(c.db_pool, v, "--db-pool", 1, 256); }},
      {"--network-threads", "KILN_NETWORK_THREADS", "network_threads", false,
       [](Config& c, const std::string& v) { return setInt(c.network_threads, v, "--network-threads", 1, 64); }},
      {"--controller-threads", "KILN_CONTROLLER_THREADS", "controller_threads", false,
       [](Config& c, const std::string& v) { return setInt(c.controller_threads, v, "--controller-threads", 1, 64); }},
      {"--retention", "KILN_RETENTION", "retention", false,
       [](Config& c, const std::string& v) -> Status {
         if (auto p = retention::parsePolicy(v); !p.ok()) return p.error();
         c.retention = v;
         return Ok{};
       }},
      {"--retention-interval", "KILN_RETENTION_INTERVAL", "retention_interval", false,
       [](Config& c, const std::string& v) {
         return setInt(c.retention_interval_s, v, "--retention-interval (0: never)", 0, 7 * 86400);
       }},
      {"--audit-export-dir", "KILN_AUDIT_EXPORT_DIR", "audit_export_dir", false, str(&Config::audit_export_dir)},
      {"--min-agent-version", "KILN_MIN_AGENT_VERSION", "min_agent_version", false,
       [](Config& c, const std::string& v) -> Status {
         if (!v.empty() && !core::versionNumbers(v))
           return invalidArgument("--min-agent-version must start with a version number like 0.2.0, got '" + v + "'");
         c.min_agent_version = v;
         return Ok{};
       }},
  };
}

bool isLoopback(const std::string& host) {
  return host == "127.0.0.1" || host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

// scheduler: {kind: slurm, node_name: ..., nodes: {HOST: NODE}, interval: 10, on_jobs: wait, ...}
Status schedulerMap(Config& c, const YAML::Node& map, const std::vector<Setting>& all, const std::string& file) {
  auto where = [&](const YAML::Node& n) { return file + ":" + std::to_string(n.Mark().line + 1) + ": "; };
  for (const auto& kv : map) {
    const std::string sub = kv.first.as<std::string>();
    if (sub == "nodes") {
      if (!kv.second.IsMap()) return invalidArgument(where(kv.second) + "scheduler.nodes: expected a map of host: node");
      for (const auto& n : kv.second) {
        if (!n.second.IsScalar()) return invalidArgument(where(n.second) + "scheduler.nodes: expected host: node");
        c.slurm_nodes[n.first.as<std::string>()] = n.second.as<std::string>();
      }
      continue;
    }
    const std::string key = sub == "kind" ? "scheduler" : sub == "hook" ? "scheduler_hook" : "slurm_" + sub;
    const Setting* found = nullptr;
    for (const auto& s : all)
      if (key == s.key) found = &s;
    if (!found || key == "slurm_nodes")
      return invalidArgument(where(kv.first) + "unknown setting 'scheduler." + sub +
                             "' (expected kind, hook, node_name, nodes, interval, on_jobs, bin_dir or timeout)");
    if (!kv.second.IsScalar()) return invalidArgument(where(kv.second) + "scheduler." + sub + ": expected a single value");
    if (auto st = found->set(c, kv.second.as<std::string>()); !st.ok()) return invalidArgument(file + ": " + st.error().message);
  }
  return Ok{};
}

}  // namespace

std::string Config::host() const { return listen.substr(0, listen.rfind(':')); }
int Config::port() const { return std::stoi(listen.substr(listen.rfind(':') + 1)); }

std::string usage() {
  return "usage: kilnd [--config FILE] [--listen HOST:PORT] [--database-url URL]\n"
         "             [--admin-token-file FILE] [--log-level LEVEL] [--log-format text|json]\n"
         "             [--tls-cert FILE --tls-key FILE]\n"
         "             [--allow-insecure-http] [--web-root DIR] [--workflows-dir DIR] [--threads N] [--db-pool N]\n"
         "             [--workflow-executables FILE] [--trusted-keys FILE] [--agent-client-ca FILE]\n"
         "             [--network-threads N] [--unreachable-after SECONDS] [--lease-grace SECONDS]\n"
         "             [--agent-token-ttl SECONDS (0: never; default 30 days)]\n"
         "             [--scheduler-hook URL|PATH] [--scheduler none|hook|slurm] [--slurm-node-name RULE]\n"
         "             [--slurm-interval SECONDS] [--slurm-on-jobs wait|requeue] [--slurm-bin-dir DIR]\n"
         "             [--slurm-timeout SECONDS] [--reliability-target PER_8K_GPUS_PER_DAY]\n"
         "             [--pod-p90-target SECONDS] [--controller-threads N] [--report-priority on|off]\n"
         "             [--retention KIND=DURATION,...] [--retention-interval SECONDS] [--audit-export-dir DIR]\n"
         "             [--min-agent-version VERSION]\n"
         "Each flag can also be set as KILN_<NAME> in the environment (KILN_LISTEN, KILN_DATABASE_URL, ...)\n"
         "or as <name> in the YAML config file (listen, database_url, ...). Flags win over the environment,\n"
         "the environment over the file.\n";
}

Result<Config> parseConfig(const std::vector<std::string>& args,
                           const std::map<std::string, std::string>& env,
                           const std::function<Result<std::string>(const std::string&)>& read_file) {
  const auto all = settings();
  // 1. Find --config (flag or env) first.
  std::string config_file;
  if (auto it = env.find("KILN_CONFIG"); it != env.end()) config_file = it->second;
  std::vector<std::pair<const Setting*, std::string>> from_flags;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i], value;
    bool has_value = false;
    if (auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_value = true;
    }
    if (arg == "--help" || arg == "-h") return Error(ErrorCode::kInvalidArgument, "help");
    if (arg == "--config") {
      if (!has_value) {
        if (i + 1 >= args.size()) return invalidArgument("--config needs a value");
        value = args[++i];
      }
      config_file = value;
      continue;
    }
    const Setting* found = nullptr;
    for (const auto& s : all)
      if (arg == s.flag) found = &s;
    if (!found) return invalidArgument("unknown flag '" + args[i] + "'");
    if (!has_value) {
      if (found->is_bool) value = "true";
      else if (i + 1 >= args.size()) return invalidArgument(std::string(found->flag) + " needs a value");
      else value = args[++i];
    }
    from_flags.emplace_back(found, value);
  }

  Config c;
  // 2. The config file.
  if (!config_file.empty()) {
    auto text = read_file(config_file);
    if (!text.ok()) return invalidArgument("cannot read config file " + config_file + ": " + text.error().message);
    try {
      YAML::Node root = YAML::Load(*text);
      if (!root.IsNull() && !root.IsMap()) return invalidArgument(config_file + ": expected a map of settings");
      for (const auto& kv : root) {
        const std::string key = kv.first.as<std::string>();
        if (key == "scheduler" && kv.second.IsMap()) {
          if (auto st = schedulerMap(c, kv.second, all, config_file); !st.ok()) return st.error();
          continue;
        }
        const Setting* found = nullptr;
        for (const auto& s : all)
          if (key == s.key) found = &s;
        if (!found)
          return invalidArgument(config_file + ":" + std::to_string(kv.first.Mark().line + 1) +
                                 ": unknown setting '" + key + "'");
        if (!kv.second.IsScalar())
          return invalidArgument(config_file + ":" + std::to_string(kv.second.Mark().line + 1) + ": " + key +
                                 ": expected a single value");
        if (auto st = found->set(c, kv.second.as<std::string>()); !st.ok())
          return invalidArgument(config_file + ": " + st.error().message);
      }
    } catch (const YAML::Exception& e) {
      return invalidArgument(config_file + ":" + std::to_string(e.mark.line + 1) + ":" +
                             std::to_string(e.mark.column + 1) + ": " + e.msg);
    }
  }
  // 3. Environment, 4. flags.
  for (const auto& s : all)
    if (auto it = env.find(s.env); it != env.end())
      if (auto st = s.set(c, it->second); !st.ok()) return invalidArgument(std::string(s.env) + ": " + st.error().message);
  for (const auto& [s, v] : from_flags)
    if (auto st = s->set(c, v); !st.ok()) return st.error();

  // Cross-field rules.
  auto colon = c.listen.rfind(':');
  if (colon == std::string::npos || colon == 0) return invalidArgument("--listen must be HOST:PORT, got '" + c.listen + "'");
  int port = 0;
  if (auto st = setInt(port, c.listen.substr(colon + 1), "--listen port", 1, 65535); !st.ok()) return st.error();
  if (c.database_url.empty()) return invalidArgument("--database-url (or KILN_DATABASE_URL) is required");
  if (c.tls_cert.empty() != c.tls_key.empty()) return invalidArgument("--tls-cert and --tls-key go together");
  if (!c.agent_client_ca.empty() && c.tls_cert.empty())
    return invalidArgument("--agent-client-ca needs HTTPS (--tls-cert and --tls-key): client certificates are a TLS feature");
  if (!c.scheduler_hook.empty() && c.scheduler_hook.rfind("http://", 0) != 0 && c.scheduler_hook.rfind("https://", 0) != 0) {
    // A command: an absolute path to an executable file (run without a shell, with arguments).
    struct stat st {};
    if (c.scheduler_hook[0] != '/' || ::stat(c.scheduler_hook.c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
        ::access(c.scheduler_hook.c_str(), X_OK) != 0)
      return invalidArgument("--scheduler-hook must be an http:// or https:// URL or the absolute path of an executable file, got '" +
                             c.scheduler_hook + "'");
  }
  if (c.scheduler.empty()) c.scheduler = c.scheduler_hook.empty() ? "none" : "hook";
  if (c.scheduler == "hook" && c.scheduler_hook.empty())
    return invalidArgument("--scheduler hook needs --scheduler-hook URL|PATH");
  if (c.scheduler == "slurm" && !c.scheduler_hook.empty())
    return invalidArgument("--scheduler slurm and --scheduler-hook are two schedulers: give one");
  if (c.scheduler == "none" && !c.scheduler_hook.empty())
    return invalidArgument("--scheduler none contradicts --scheduler-hook");
  if (c.tls_cert.empty() && !isLoopback(c.host()) && !c.allow_insecure_http)
    return invalidArgument("refusing plain HTTP on " + c.host() +
                           ": give --tls-cert and --tls-key, or --allow-insecure-http on a trusted network");
  return c;
}

}  // namespace kiln::kilnd
