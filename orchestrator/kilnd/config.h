#pragma once
// kilnd's settings from flags, environment (KILN_*) and a YAML config file (--config), in that
// order of precedence. Pure apart from reading the config file.

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/result.h"

namespace kiln::kilnd {

struct Config {
  std::string listen = "127.0.0.1:8080";
  std::string database_url;
  std::string admin_token_file;
  std::string log_level = "info";
  std::string log_format = "text";  // text | json (one object per line, log_format.h)
  std::string tls_cert, tls_key;
  std::string web_root;
  bool allow_insecure_http = false;  // plain HTTP on a non-loopback address
  int threads = 4;                   // request executor threads
  int db_pool = 8;
  int network_threads = 4;
  // Pods in flight the rollout controller reconciles at once (ControllerOptions::reconcile_threads).
  int controller_threads = 4;
  std::string workflows_dir;       // workflow YAML loaded (and versioned) at start-up
  // A file listing the executables workflow steps may run (common/executable_allowlist.h);
  // empty: any. Checked at load, PUT and start.
  std::string workflow_executables;
  // The OpenPGP keys (as `gpg --export` writes them) that must sign every bundle's checksums
  // (issue 31, common/artifact_trust.h); empty: signatures are not checked. kilnd does not start
  // when the file cannot be read.
  std::string trusted_keys;
  // Mutual TLS for agents (issue 31): the CA that signs agents' client certificates; agent
  // requests and registrations then count only with a certificate naming their host. Needs
  // --tls-cert/--tls-key.
  std::string agent_client_ca;
  int unreachable_after_s = 90;    // an agent silent this long makes its host unreachable
  int lease_grace_s = 30;          // beyond a step's timeout before its assignment is lost
  // Agent tokens expire this long after they are issued (0: never); agents renew theirs after
  // two thirds of it (issue 31).
  int agent_token_ttl_s = 30 * 24 * 3600;
  // URL kilnd POSTs {action: release, rollout, pod, hosts} to, or the absolute path of an
  // executable it runs as `PATH release ROLLOUT POD HOST...` (scheduler_hook.h).
  std::string scheduler_hook;
  // The job scheduler: "" (none, or the hook when scheduler_hook is set), "hook", or "slurm"
  // (the built-in Slurm driver, orchestrator/scheduler/slurm_driver.h). In the config file also
  // as a map: scheduler: {kind: slurm, node_name: "{host}", nodes: {HOST: NODE}, interval: 10,
  // on_jobs: wait|requeue, bin_dir: /usr/bin, timeout: 10}.
  std::string scheduler;
  std::string slurm_node_name = "{host}";         // naming rule ({host}, {pod}, {tray}, {tray2}, ...)
  std::map<std::string, std::string> slurm_nodes;  // explicit host -> node names (config file only)
  int slurm_interval_s = 10;                       // the driver's pass
  // Agents' reports taken by their run's purpose, pre-job checks first (runs/run_priority.h);
  // off: arrival order (a benchmark's baseline).
  bool report_priority = true;
  std::string slurm_on_jobs = "wait";              // wait | requeue
  std::string slurm_bin_dir;                       // where scontrol, sinfo, squeue are ("" = PATH)
  int slurm_timeout_s = 10;                        // per Slurm command
  // The targets the console and the metrics compare against (GET /targets, GET /reliability):
  // interruptions per 8,000 GPUs per day (docs/FACTS.md's north star: 2, i.e. 96,000 GPU-hours MTBI)
  // and a rollout's P90 pod upgrade time (docs/FACTS.md: 7 h -> 2 h).
  double reliability_target = 2.0;
  int pod_p90_target_s = 7200;
  // Retention (issue 33, orchestrator/retention/retention.h): KIND=DURATION rules over the
  // defaults, checked at start; the leader sweeps every retention_interval_s (0: never).
  // audit_export_dir: where audit records are written (JSON lines) before they are deleted;
  // empty: the audit log is never pruned.
  std::string retention;
  int retention_interval_s = 600;
  std::string audit_export_dir;
  // The oldest kiln-agent version a registration may have (issue 33: version skew); "": any.
  std::string min_agent_version;

  std::string host() const;
  int port() const;
};

// Errors are kInvalidArgument with a message fit for stderr (exit code 2).
// `read_file` reads the config file (injected for tests).
Result<Config> parseConfig(const std::vector<std::string>& args,
                           const std::map<std::string, std::string>& env,
                           const std::function<Result<std::string>(const std::string&)>& read_file);

std::string usage();

}  // namespace kiln::kilnd
