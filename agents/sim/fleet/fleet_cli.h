#pragma once
// The command line of kiln-vfleet and the pure pieces of its wiring: flags, host selection
// (--hosts all | pod:ID,... | FILE), start-up faults, the periodic status line. main.cc does
// the I/O. Pure; thread-compatible.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agents/sim/faults.h"
#include "agents/sim/fleet/fleet.h"
#include "agents/sim/host_state.h"
#include "common/result.h"

#include "common/agent_protocol.h"

namespace kiln::vfleet {

struct CliOptions {
  std::string url;
  std::string enroll_token_file;
  std::string token_file;       // viewer/admin token for --hosts all|pod:... and version adoption
  std::string hosts;            // all | pod:ID[,ID...] | FILE
  std::string state_dir;        // tokens and simulated state survive restarts here
  double time_scale = 1.0;
  double duration_spread = 0;   // log-normal shape of each step's tool time factor; 0 = nominal
  int poll_wait_s = 25;
  int connections = 1024;
  int idle_poll_s = 30;
  std::int64_t running_poll_delay_ms = protocol::kRunningPollDelayMs;
  std::uint64_t fault_seed = 1;
  double fault_rate = 0.01;
  std::vector<sim::Fault> fault_kinds;                         // --fault-kind, seeded per host
  std::vector<std::pair<std::string, sim::Fault>> host_faults;  // --fault HOST:KIND[:k=v,...]
  std::size_t max_hosts = 0;    // 0 = no limit
  int status_interval_s = 10;
  std::optional<std::uint64_t> seed;  // jitter seed; random when absent
  std::optional<double> ramp_s;       // default: hosts / 500 s, at most 30 s
  std::string control_file;
  bool adopt_versions = true;
  std::string log_level = "info";
};

std::string usage();
// `args` without the program name. kInvalidArgument naming the bad flag; "help" for -h/--help.
Result<CliOptions> parseCli(const std::vector<std::string>& args);

// "KIND" or "KIND:key=value,..." with keys gpu, link, count, tool, factor, xid.
Result<sim::Fault> parseFaultSpec(const std::string& spec);

// sim platforms for kilnd's names; san_miguel (1 rack x 72, not simulated yet) is shown as
// clemente, its closest shape. nullopt for anything else.
std::optional<sim::Platform> platformFromFleet(const std::string& name);

struct HostEntry {
  std::string id;
  sim::Platform platform = sim::Platform::kCatalina;
  std::string pod;  // empty when unknown (host files)
};

struct HostSelection {
  bool all = false;
  std::vector<std::string> pods;
  std::string file;
};
Result<HostSelection> parseHostSelection(const std::string& spec);

// A host file: one host per line, optionally followed by its platform; '#' starts a comment.
Result<std::vector<HostEntry>> parseHostFile(const std::string& text);

// GET `target` -> its JSON document (any non-200 is an error).
using FetchJson = std::function<Result<nlohmann::json>(const std::string& target)>;

// Pages through GET /api/v1/hosts (all, or ?pod= per pod) with keyset cursors; stops at
// `max_hosts` when not 0.
Result<std::vector<HostEntry>> listHosts(const HostSelection& sel, const FetchJson& fetch,
                                         std::size_t max_hosts);

// The most common version of each component in GET /api/v1/pods/{id}'s component_versions.
std::map<std::string, std::string> podVersions(const nlohmann::json& pod);

// Adds the start-up faults that apply to `state`: each --fault-kind when the seeded draw picks
// this host (sim::seededFault), each --fault naming it. Skips faults it already carries (a
// state reloaded from --state-dir). Returns the faults added.
std::vector<sim::Fault> applyStartFaults(sim::HostState& state, const CliOptions& options);

// One control-file line: "fault HOST KIND[:k=v,...]" or "clear HOST [KIND]". Applies it to the
// fleet. kInvalidArgument for a bad line.
Status applyControlLine(Fleet& fleet, const std::string& line);

struct StatusInputs {
  FleetCounters now, before;
  double interval_s = 1;
  double poll_p50 = 0, poll_p99 = 0;      // all polls (long polls include their wait)
  double quick_p50 = 0, quick_p99 = 0;    // polls answered before their wait
  double request_p50 = 0, request_p99 = 0;  // reports and enrolments
  std::size_t connections = 0, queued = 0;
  double cpu_percent = 0, rss_mb = 0;
};
std::string statusLine(const StatusInputs& in);

}  // namespace kiln::vfleet
