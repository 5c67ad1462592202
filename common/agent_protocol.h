#pragma once
// docs/agent-protocol.md as data, the one copy kilnd, kiln-agent and kiln-vfleet share: the
// assignment kilnd hands out (encoded by kilnd, decoded by both agents), the answer to a poll,
// the step report agents send back (encoded by both agents; kilnd's strict decoder,
// orchestrator/runs/report.cc, reads the same field names), the request paths and their
// percent-encoding. Golden files: common/tests/testdata/agent-protocol.
// Pure; thread-safe.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace kiln::protocol {

// Largest output_cap an agent honours (bytes per stream sent back).
inline constexpr std::size_t kMaxOutputCap = 16u << 20;

// How long an agent lets a step run before its first `running=` poll (docs/agent-protocol.md,
// "Cancellation"). Most steps of a health check end within a second; their report's answer
// already tells the agent everything that poll would, so the poll only cost kilnd a request, a
// parked connection and an answer per step. A step that runs longer is polled for as before:
// a cancellation reaches it at most this much later.
inline constexpr std::int64_t kRunningPollDelayMs = 1000;

// An artifact a step needs (common/artifact_ref.h): the agent fetches it from `url` (or a
// per-building mirror of it), checks `sha256` before anything uses it, and, when the host
// trusts signing keys, checks that `signature` (ASCII-armored, detached) signs `checksums`
// (SHA256SUMS text) and that the list holds `sha256`. It then replaces every
// artifactPlaceholder(sha256) in argv with the verified file's local path.
struct ArtifactRef {
  std::string url;        // https://, http:// URL or absolute path on the host
  std::string sha256;     // 64 lower-case hex digits
  std::string checksums;  // "" when the bundle is unsigned
  std::string signature;  // "" when the bundle is unsigned
  bool operator==(const ArtifactRef&) const = default;
};

struct Assignment {
  std::string id;
  std::int64_t lease = 0;
  std::string run_id, step_id;
  int attempt = 1;
  // "run" | "reboot" | "stage" (fetch and check `artifacts` into the host's cache, run nothing:
  // a rollout stages a pod's artifacts before its drain; argv may be empty)
  std::string type = "run";
  std::vector<std::string> argv;
  std::int64_t timeout_ms = 60000;
  std::int64_t kill_grace_ms = 5000;
  std::string parse;  // a kiln::parsers format name, or empty
  std::size_t output_cap = 64 * 1024;
  // Bytes of stdout sent back instead when the tool exited 0 and its output parsed (the step's
  // stdout_when_parsed, issue 35): the parsed document carries what the checks read. nullopt:
  // output_cap always. Sent only when set; an agent that predates it sends output_cap.
  std::optional<std::size_t> parsed_output_cap;
  bool inventory_after = false;
  std::vector<ArtifactRef> artifacts;  // sent only when non-empty

  bool isReboot() const { return type == "reboot"; }
  bool isStage() const { return type == "stage"; }
  bool operator==(const Assignment&) const = default;
};

// Reads an Assignment; missing optional fields take the defaults above. kInvalidContent when
// id is missing, a field has the wrong type, type is unknown, argv is empty (but for a stage)
// or not all strings, a number is negative, or an artifact has no url or a sha256 that is not
// 64 hex digits. output_cap is clamped to kMaxOutputCap.
Result<Assignment> assignmentFromJson(const nlohmann::json& j);
// Every field, always (kilnd's side).
nlohmann::json toJson(const Assignment& a);

// A 200 answer to GET .../work: an assignment, assignments to cancel, or both.
struct PollAnswer {
  std::optional<nlohmann::json> assignment;  // raw: validated by the caller, who can report
  std::vector<std::string> cancel;
};
// kInvalidContent when the body is not a JSON object.
Result<PollAnswer> pollAnswerFromBody(const std::string& body);

// The step report's field names (POST resultPath(id)), the one spelling of each.
namespace report_field {
inline constexpr const char* kLease = "lease";
inline constexpr const char* kHost = "host";
inline constexpr const char* kReady = "ready";
inline constexpr const char* kStarted = "started";
inline constexpr const char* kSpawnError = "spawn_error";
inline constexpr const char* kExitCode = "exit_code";
inline constexpr const char* kSignal = "signal";
inline constexpr const char* kTimedOut = "timed_out";
inline constexpr const char* kCancelled = "cancelled";
inline constexpr const char* kDurationMs = "duration_ms";
inline constexpr const char* kStdoutTail = "stdout_tail";
inline constexpr const char* kStderrTail = "stderr_tail";
inline constexpr const char* kStdoutBytes = "stdout_bytes";
inline constexpr const char* kStderrBytes = "stderr_bytes";
inline constexpr const char* kParsed = "parsed";
inline constexpr const char* kParseError = "parse_error";
inline constexpr const char* kBootId = "boot_id";
inline constexpr const char* kInventory = "inventory";
inline constexpr const char* kAgentNote = "agent_note";
}  // namespace report_field

// What an agent reports of one step. The defaults are a step that never started.
struct StepReport {
  std::int64_t lease = 0;
  std::string host;
  bool started = false;
  std::string spawn_error;  // why it did not start
  int exit_code = -1;
  int signal = 0;
  bool timed_out = false;
  bool cancelled = false;
  std::int64_t duration_ms = 0;
  std::string stdout_tail, stderr_tail;  // the last output_cap bytes of each stream
  std::int64_t stdout_bytes = 0, stderr_bytes = 0;
  nlohmann::json parsed;  // the parser's document (null: none)
  std::string parse_error;
  std::string boot_id;
  nlohmann::json inventory;  // inventory_after's reading (null: none)
  std::string agent_note;

  bool operator==(const StepReport&) const = default;
};
// Every field, always (the agents' side). `ready` is added by the sender, at the moment it
// sends (whether the agent holds another step then).
nlohmann::json toJson(const StepReport& r);

// The agents' one rule for a.parsed_output_cap: a step that started, exited 0 without a signal,
// timeout or cancellation, and whose output parsed keeps only the last parsed_output_cap bytes
// of its stdout tail (cut at a UTF-8 character's start); anything else keeps its tail as it is.
// stdout_bytes still counts the whole output.
void trimParsedStdout(const Assignment& a, StepReport& r);

// ---- Registration (POST registerPath() with the enrolment token) ----

// What an agent says of itself when it enrols.
struct Registration {
  std::string host, boot_id, agent_version;
  nlohmann::json inventory = nlohmann::json::object();  // the agent's component reading
  bool operator==(const Registration&) const = default;
};
// Every field, always (the agents' side).
nlohmann::json toJson(const Registration& r);
// kilnd's strict reading: kInvalidContent with one FieldError per bad field (an unknown field,
// host missing or empty, boot_id or agent_version not a string of at most 256 bytes, inventory
// neither an object nor null); the message names the first.
Result<Registration> registrationFromJson(const nlohmann::json& body);

// The 200 answer to a registration, and to a renewal (POST renewPath(host) with the agent
// token): the host's agent token, and how long it is good for (seconds from the answer, counted
// on the agent's clock; 0: it does not expire, and the field is not sent).
struct Enrolment {
  std::string host, token, token_id;
  std::int64_t expires_in_s = 0;
  bool operator==(const Enrolment&) const = default;
};
nlohmann::json toJson(const Enrolment& e);
// kInvalidContent when the body is not a JSON object with a non-empty string token.
Result<Enrolment> enrolmentFromBody(const std::string& body);

// ---- The answer to a step report (POST resultPath(id)) ----

// What kilnd made of a report it took (a stale lease is answered 409 instead).
enum class ReportOutcome { kAccepted, kDuplicate, kCancelled };
std::string_view reportOutcomeName(ReportOutcome o);  // "accepted", "duplicate", "cancelled"

struct ReportReply {
  ReportOutcome outcome = ReportOutcome::kAccepted;
  // The host's next step, handed out with the answer to a report that said `ready`: raw, as
  // PollAnswer's (validated by the agent, which can report on it).
  std::optional<nlohmann::json> assignment;
};
// {"acknowledged": true, "outcome": ..., "assignment"?: ...} (kilnd's side).
nlohmann::json toJson(const ReportReply& r);
// kInvalidContent when the body is not a JSON object or its outcome is not one of the three; an
// answer without an outcome (kilnd before it said one) is kAccepted.
Result<ReportReply> reportReplyFromBody(const std::string& body);

// ---- Parse formats ----

// The names a step may give as its `parse` (a workflow step's `parse:`, Assignment::parse):
// the workflow loader accepts these and no other, kiln-agent's parsers read each of them
// (agents/parsers: its tests check the two lists agree).
const std::vector<std::string>& parseFormatNames();

// RFC 3986 unreserved characters kept, every other byte %XX.
std::string percentEncode(const std::string& s);
std::string registerPath();
// An agent renews its token here with that token (issue 31).
std::string renewPath(const std::string& host);
std::string workPath(const std::string& host, int wait_s, const std::string& boot_id,
                     const std::string& running_id);
std::string resultPath(const std::string& assignment_id);
// Where a running step's live output goes (POST, issue 18).
std::string outputPath(const std::string& assignment_id);

// JSON text that never throws on invalid UTF-8 (tool output is arbitrary bytes): bad bytes
// become U+FFFD.
std::string dumpJson(const nlohmann::json& j);

}  // namespace kiln::protocol
