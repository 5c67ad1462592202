#pragma once
// The typed form of a workflow YAML file (workflows/*.yaml). The loader (loader.h) builds it and
// guarantees every invariant documented here; the runtime reads it. Pure data: no YAML, no I/O.
// All types are plain values: copy freely, share read-only between threads.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace kiln::workflow {

// Parameter values of one run, by parameter name, as text ("4", "true", "30m", "570.124.06").
using ParamValues = std::map<std::string, std::string>;

// Values of `{{host.*}}` / `{{pod.*}}` references for one host, keyed by the full dotted name:
// "host.id", "host.name", "host.pod", "host.rack", "host.tray", "host.platform", "pod.id",
// "pod.name", "pod.hosts" (comma-joined host names of the pod, pod-scope workflows only), and
// the host's BMC from its pod's management block (issue 32; empty when the pod names none):
// "host.bmc" (address[:port]), "host.bmc_protocol", "host.bmc_credential" (a credential's
// name in the runner's store, never a secret), "host.runner" (the out-of-band runner), and
// "pod.switch_bmcs": the pod's NVLink switch trays and their BMCs as kiln-oob's device list,
// "p1-s1=p1-s1-bmc:443,p1-s2=...", in tray order (empty when the pod names no switch_bmc), and
// "pod.bmc_credential": the credential name of the pod's management block.
using ContextFields = std::map<std::string, std::string>;

// A length of time written like "90s", "15m", "1h30m", "500ms" or "0s".
struct Duration {
  std::chrono::milliseconds value{0};
  bool operator==(const Duration&) const = default;
};
// Parses "90s", "15m", "2h", "1h30m", "500ms"; nullopt for anything else (no sign, no spaces).
std::optional<Duration> parseDuration(std::string_view text);
// The shortest canonical text: 5400000 ms -> "1h30m", 0 -> "0s".
std::string formatDuration(Duration d);

// A field that is either a literal or exactly one `{{param}}` of the matching type.
struct DurationValue {
  Duration literal;
  std::string param;  // non-empty: the value is this (duration-typed) parameter's value
  bool operator==(const DurationValue&) const = default;
};
struct IntValue {
  std::int64_t literal = 0;
  std::string param;  // non-empty: the value is this (int-typed) parameter's value
  bool operator==(const IntValue&) const = default;
};

enum class Scope { kHost, kPod };
// kArtifact: a file a step needs, `LOCATION#sha256=HEX` (common/artifact_ref.h) or "" for none.
// In argv it becomes the artifact's placeholder, which the agent replaces with the verified
// local path; `when` and checks see the value as written.
enum class ParamType { kString, kInt, kBool, kDuration, kArtifact };
// run: execute `run` as a process. reboot: the agent reboots the host (argv `run`, default
// ["kiln-reboot"]); the step completes when the agent reports again with a new boot id.
// barrier: every host of the pod reaches it before any goes on (pod scope only).
// stage: the agent fetches and checks the artifacts named by `artifacts` (params of type
// artifact) into its cache and runs nothing (a rollout stages a pod's files before its drain).
enum class StepType { kRun, kReboot, kBarrier, kStage };
// What a failed step (after its retries) does to the run:
//   fail:     the run stops and fails (default).
//   continue: later steps still run (to gather diagnostics), the run still fails at the end.
//   warn:     the failure is recorded as a warning; the run goes on and may pass.
enum class OnFailure { kFail, kContinue, kWarn };
// each: every host of the run executes the step (default). leader: in a pod-scope run only the
// pod's first host (in pod order) executes it; the others wait at the step until it finishes
// and share its outcome (it acts as a barrier on both sides). Used for pod-wide tools like
// `dcgmi mndiag --hostList {{pod.hosts}}`.
enum class RunOn { kEach, kLeader };
// Where a run step executes (issue 32): host = on the host's own agent (default); bmc = on the
// out-of-band runner that serves the host's pod (the pod's management block names it), about
// the host's BMC: `{{host.bmc}}`, `{{host.bmc_protocol}}` and `{{host.bmc_credential}}` name it
// for a tool like kiln-oob. The host's agent never sees such a step. switch_trays = once per pod
// (run_on: leader) on the pod's runner, about the pod's NVLink switch trays: `{{pod.switch_bmcs}}`
// lists them for kiln-oob's device-list mode; they have no agent of their own.
enum class Target { kHost, kBmc, kSwitchTrays };
// Check operators. kMaxIncrease is the delta form (`delta_from` + `max_increase`).
enum class CheckOp { kEq, kNe, kLt, kLe, kGt, kGe, kIn, kNotIn, kMatches, kExists, kMaxIncrease };

const char* scopeName(Scope s);
const char* paramTypeName(ParamType t);
const char* stepTypeName(StepType t);
const char* onFailureName(OnFailure f);
const char* runOnName(RunOn r);
const char* targetName(Target t);
const char* checkOpName(CheckOp op);  // the YAML key: "eq", ..., "max_increase"

// The `parse` formats the agent's parsers understand (kept as a list here on purpose: this
// library does not depend on the parsers).
const std::vector<std::string>& knownParseFormats();
// Every `{{host.*}}` / `{{pod.*}}` name a workflow may use; pod.hosts only in pod scope.
const std::vector<std::string>& knownContextFields();

// Where a thing was written: 1-based line and column; 0 when unknown.
struct SourceMark {
  int line = 0;
  int column = 0;
  bool operator==(const SourceMark&) const = default;
};

struct ParamSpec {
  std::string name;
  ParamType type = ParamType::kString;
  std::optional<std::string> default_value;  // validated against `type`; absent = required
  std::string description;
  bool operator==(const ParamSpec&) const = default;
};

// One assertion over a step's parsed output. See orchestrator/workflow/README.md for the
// language. Invariants: `path` parses (checks.h parsePath); exactly one operator; kMaxIncrease
// iff `delta_from` is set, naming an earlier step that has a parse.
struct Check {
  std::string name;
  std::string description;
  std::string path;  // "gpus[*].remapped_rows.pending"
  CheckOp op = CheckOp::kEq;
  // The operand: a scalar for eq/ne/lt/le/gt/ge/matches/max_increase, an array for in/not_in, a bool
  // for `exists`. Strings may contain `{{param}}`; a string that is exactly "{{p}}" takes p's
  // type (int -> number, bool -> bool).
  nlohmann::json expected;
  std::string delta_from;           // step id of the baseline (kMaxIncrease only)
  std::vector<std::string> fields;  // counters compared per element (kMaxIncrease only)
  std::string when;                 // template; empty, "false" or "0" after substitution = skip
  std::string explain;              // a path whose values are appended to a failure message
  SourceMark mark;
  bool operator==(const Check&) const = default;
};

struct Retries {
  int count = 0;      // extra attempts after the first
  Duration backoff;   // wait between attempts
  bool operator==(const Retries&) const = default;
};

// On a failed check, rerun the steps from `from` up to and including this one, `times` times.
// The L11 link classification (link_classification.h) reads the attempts: transient if every
// retest passes, persistent otherwise.
struct Retest {
  std::string from;
  int times = 2;
  bool operator==(const Retest&) const = default;
};

// A reboot step's recovery through the host's BMC (issue 32): when the host is silent for the
// step's whole lease (it went down and did not come back), the pod's out-of-band runner
// power-cycles it (`kiln-oob power cycle`, the BMC's power state and newest event log entries
// in the step's output), at most `power_cycles` times, each bounded by `timeout`; after each
// cycle the host has the step's timeout again to report its new boot. Only then does it fail.
struct Recover {
  int power_cycles = 1;
  Duration timeout{std::chrono::minutes(5)};
  bool operator==(const Recover&) const = default;
};

// A barrier's agreement (issue 32: the NVLink domain as a whole). When every host still running
// reaches the barrier, the values each found at `paths` in the parsed output of the earlier step
// `step` are compared across the pod: the value most hosts hold is the pod's, and a host that
// reports another (or whose own GPUs disagree, or that has no output of the step) fails the
// barrier, naming the path, its value and the pod's. No value held by most hosts fails them all
// (a split domain has no side that is right). E.g. every tray of an NVL72 domain reports the same
// fabric clique id and cluster UUID.
struct Agree {
  std::string step;
  std::vector<std::string> paths;
  bool operator==(const Agree&) const = default;
};

// The most a step's stdout_when_parsed may keep: the whole tail kilnd asks for anyway.
inline constexpr std::int64_t kMaxStdoutWhenParsed = 64 * 1024;

struct StepSpec {
  std::string id;
  std::string description;
  StepType type = StepType::kRun;
  std::vector<std::string> run;  // argv; elements may hold {{param}} / {{host.x}}; empty for barriers
  DurationValue timeout;
  Retries retries;
  std::vector<int> expect_exit{0};
  std::string parse;  // one of knownParseFormats(), or empty
  std::vector<Check> checks;  // non-empty only with a parse
  OnFailure on_failure = OnFailure::kFail;
  RunOn run_on = RunOn::kEach;
  Target target = Target::kHost;    // run steps only
  std::optional<Recover> recover;   // reboot steps only
  std::optional<Agree> agree;       // barrier steps only
  // A read-back (issue 32), on target: bmc or switch_trays steps with parse: json: Kiln's
  // component kind -> the device's FirmwareInventory member id ({bmc: BMC_Firmware}). The
  // versions the step's output reports (kiln-oob firmware list: `firmware[]` for the host's own
  // BMC, `devices[*].firmware[]` for switch trays) become the devices' component versions:
  // compliance counts each device by its own read-back. Kinds: the host's (not nvswitch) for
  // target: bmc, nvswitch only for target: switch_trays.
  std::map<std::string, std::string> inventory;
  // Bytes of the tool's stdout sent back when it exited 0 and its output parsed (issue 35): the
  // parsed document is kept whole and is what the checks read; a step that failed or did not
  // parse sends its whole tail (64 KiB) as before. nullopt: always the whole tail. A pre-job
  // check of 8,192 hosts otherwise stores ~0.9 GB of raw tool output per job.
  std::optional<std::int64_t> stdout_when_parsed;
  std::string when;  // template; empty, "false" or "0" after substitution = skip the step
  std::optional<Retest> retest;
  std::vector<std::string> artifacts;  // stage steps: the artifact params to fetch (non-empty)
  SourceMark mark;
  bool operator==(const StepSpec&) const = default;
};

struct WorkflowSpec {
  std::string name;
  std::string version;
  std::string description;
  Scope scope = Scope::kHost;
  std::vector<ParamSpec> params;
  std::vector<StepSpec> steps;
  // The whole step list must pass `repeat` times in a row, `soak_between` apart (quarantine
  // validation: "passes twice, a soak apart").
  IntValue repeat{1, {}};
  DurationValue soak_between;
  std::optional<DurationValue> timeout;  // deadline for one pass over the steps
  std::string source_name;   // file path or "request body"
  std::string content_hash;  // contentHash() of the YAML text it was loaded from

  const ParamSpec* findParam(std::string_view name) const;
  const StepSpec* findStep(std::string_view id) const;
  // Whether a later step's delta check (`delta_from`) reads this step's parsed output: only
  // those outputs are kept in a run's state (the rest stay with the step's assignment).
  bool isDeltaBaseline(std::string_view step_id) const;
  // The paths a barrier's `agree` compares of this step's output (empty: none); the engine keeps
  // only their values in the run's state.
  std::vector<std::string> agreedPaths(std::string_view step_id) const;
  bool operator==(const WorkflowSpec&) const = default;
};

// Whether `value` is valid text for a parameter of type `t` ("4", "true", "30m"; any string;
// "" or `LOCATION#sha256=HEX` for an artifact).
bool isValidParamValue(ParamType t, std::string_view value);
// What a value of type `t` must look like, for error messages: "an integer", ...
const char* paramTypeExpectation(ParamType t);
// Parses an optionally negative decimal integer that fits in int64; nullopt otherwise.
std::optional<std::int64_t> parseInt(std::string_view text);

// The parameter values of a run: `given` checked against the declared params (unknown names,
// values of the wrong type and missing required values are kInvalidArgument errors listing
// every bad field), completed with defaults.
kiln::Result<ParamValues> resolveParams(const WorkflowSpec& spec, const ParamValues& given);

// The value of a literal-or-param field. Pre-condition: `params` came from resolveParams.
kiln::Result<Duration> resolveDuration(const DurationValue& v, const ParamValues& params);
kiln::Result<std::int64_t> resolveInt(const IntValue& v, const ParamValues& params);

// Serializes a spec for the REST API (GET /workflows/{name}); durations as canonical text.
nlohmann::json toJson(const WorkflowSpec& spec);

}  // namespace kiln::workflow
