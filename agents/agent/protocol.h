#pragma once
// The agent's side of docs/agent-protocol.md as data: the assignment kilnd hands out, the
// answers to a poll, and the request paths. Pure; thread-safe.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace kiln::agent {

inline constexpr const char* kAgentVersion = "0.1.0";
// Largest output_cap the agent honours (bytes per stream sent back).
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
};

// Reads an Assignment; missing optional fields take the defaults above. kInvalidContent when
// id is missing, type is unknown, argv is empty or not all strings, or a number is negative.
Result<Assignment> assignmentFromJson(const nlohmann::json& j);
nlohmann::json toJson(const Assignment& a);

// A 200 answer to GET .../work: an assignment, assignments to cancel, or both.
struct PollAnswer {
  std::optional<nlohmann::json> assignment;  // raw: validated by the caller, who can report
  std::vector<std::string> cancel;
};
// kInvalidContent when the body is not a JSON object.
Result<PollAnswer> pollAnswerFromBody(const std::string& body);

std::string percentEncode(const std::string& s);
std::string registerPath();
std::string workPath(const std::string& host, int wait_s, const std::string& boot_id,
                     const std::string& running_id);
std::string resultPath(const std::string& assignment_id);

// JSON text that never throws on invalid UTF-8 (tool output is arbitrary bytes): bad bytes
// become U+FFFD.
std::string dumpJson(const nlohmann::json& j);

// The inventory as sent to kilnd: the component -> version entries of the inventory command's
// object (string values), without boot_id.
nlohmann::json inventoryForKilnd(const nlohmann::json& inventory);

}  // namespace kiln::agent
