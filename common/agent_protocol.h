#pragma once
// docs/agent-protocol.md as data, the one copy kilnd, kiln-agent and kiln-vfleet share: the
// assignment kilnd hands out (encoded by kilnd, decoded by both agents), the answer to a poll,
// the request paths and their percent-encoding. Golden files: common/tests/testdata/agent-protocol.
// Pure; thread-safe.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace kiln::protocol {

// Largest output_cap an agent honours (bytes per stream sent back).
inline constexpr std::size_t kMaxOutputCap = 16u << 20;

struct Assignment {
  std::string id;
  std::int64_t lease = 0;
  std::string run_id, step_id;
  int attempt = 1;
  std::string type = "run";  // "run" | "reboot"
  std::vector<std::string> argv;
  std::int64_t timeout_ms = 60000;
  std::int64_t kill_grace_ms = 5000;
  std::string parse;  // a kiln::parsers format name, or empty
  std::size_t output_cap = 64 * 1024;
  bool inventory_after = false;

  bool isReboot() const { return type == "reboot"; }
  bool operator==(const Assignment&) const = default;
};

// Reads an Assignment; missing optional fields take the defaults above. kInvalidContent when
// id is missing, a field has the wrong type, type is unknown, argv is empty or not all
// strings, or a number is negative. output_cap is clamped to kMaxOutputCap.
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

// RFC 3986 unreserved characters kept, every other byte %XX.
std::string percentEncode(const std::string& s);
std::string registerPath();
std::string workPath(const std::string& host, int wait_s, const std::string& boot_id,
                     const std::string& running_id);
std::string resultPath(const std::string& assignment_id);
// Where a running step's live output goes (POST, issue 18).
std::string outputPath(const std::string& assignment_id);

// JSON text that never throws on invalid UTF-8 (tool output is arbitrary bytes): bad bytes
// become U+FFFD.
std::string dumpJson(const nlohmann::json& j);

}  // namespace kiln::protocol
