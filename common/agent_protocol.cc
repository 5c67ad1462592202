#include "common/agent_protocol.h"

#include <algorithm>

#include <cctype>
#include <limits>
#include <type_traits>

namespace kiln::protocol {
namespace {

using nlohmann::json;

template <typename T>
Result<T> field(const json& j, const char* name, T fallback) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return fallback;
  const auto wrong = [name] { return invalidContent(std::string("assignment: '") + name + "' has the wrong type"); };
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    // nlohmann converts a float to an integer with a cast (undefined behaviour out of range)
    // and a large integer by truncation: only whole numbers that fit.
    if (!it->is_number_integer()) return wrong();
    if (it->is_number_unsigned()) {
      const auto u = it->template get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(std::numeric_limits<T>::max())) return wrong();
      return static_cast<T>(u);
    }
    const auto n = it->template get<std::int64_t>();
    if (n < std::numeric_limits<T>::min() || n > std::numeric_limits<T>::max()) return wrong();
    return static_cast<T>(n);
  } else {
    try {
      return it->template get<T>();
    } catch (const json::exception&) {
      return wrong();
    }
  }
}

}  // namespace

Result<Assignment> assignmentFromJson(const json& j) {
  if (!j.is_object()) return invalidContent("assignment: not a JSON object");
  Assignment a;
  auto id = field<std::string>(j, "id", "");
  if (!id) return id.error();
  a.id = *id;
  if (a.id.empty()) return invalidContent("assignment: no id");
  auto lease = field<std::int64_t>(j, "lease", 0);
  auto run_id = field<std::string>(j, "run_id", "");
  auto step_id = field<std::string>(j, "step_id", "");
  auto attempt = field<int>(j, "attempt", 1);
  auto type = field<std::string>(j, "type", "run");
  auto argv = field<std::vector<std::string>>(j, "argv", {});
  auto timeout = field<std::int64_t>(j, "timeout_ms", 60000);
  auto grace = field<std::int64_t>(j, "kill_grace_ms", 5000);
  auto parse = field<std::string>(j, "parse", "");
  auto cap = field<std::int64_t>(j, "output_cap", 64 * 1024);
  auto inventory_after = field<bool>(j, "inventory_after", false);
  for (const Error* e : {lease ? nullptr : &lease.error(), run_id ? nullptr : &run_id.error(),
                         step_id ? nullptr : &step_id.error(),
                         attempt ? nullptr : &attempt.error(), type ? nullptr : &type.error(),
                         argv ? nullptr : &argv.error(), timeout ? nullptr : &timeout.error(),
                         grace ? nullptr : &grace.error(), parse ? nullptr : &parse.error(),
                         cap ? nullptr : &cap.error(),
                         inventory_after ? nullptr : &inventory_after.error()}) {
    if (e != nullptr) return *e;
  }
  a.lease = *lease;
  a.run_id = *run_id;
  a.step_id = *step_id;
  a.attempt = *attempt;
  a.type = *type;
  a.argv = *argv;
  a.timeout_ms = *timeout;
  a.kill_grace_ms = *grace;
  a.parse = *parse;
  a.inventory_after = *inventory_after;
  if (a.type != "run" && a.type != "reboot") {
    return invalidContent("assignment " + a.id + ": unknown type '" + a.type + "'");
  }
  if (a.argv.empty() || a.argv.front().empty()) {
    return invalidContent("assignment " + a.id + ": empty argv");
  }
  if (a.timeout_ms < 0 || a.kill_grace_ms < 0 || *cap < 0) {
    return invalidContent("assignment " + a.id + ": negative timeout, grace or output_cap");
  }
  a.output_cap = std::min<std::size_t>(static_cast<std::size_t>(*cap), kMaxOutputCap);
  return a;
}

json toJson(const Assignment& a) {
  return json{{"id", a.id},
              {"lease", a.lease},
              {"run_id", a.run_id},
              {"step_id", a.step_id},
              {"attempt", a.attempt},
              {"type", a.type},
              {"argv", a.argv},
              {"timeout_ms", a.timeout_ms},
              {"kill_grace_ms", a.kill_grace_ms},
              {"parse", a.parse},
              {"output_cap", a.output_cap},
              {"inventory_after", a.inventory_after}};
}

Result<PollAnswer> pollAnswerFromBody(const std::string& body) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return invalidContent("poll answer is not a JSON object");
  PollAnswer out;
  if (auto it = j.find("assignment"); it != j.end() && !it->is_null()) out.assignment = *it;
  if (auto it = j.find("cancel"); it != j.end() && it->is_array()) {
    for (const json& id : *it) {
      if (id.is_string()) out.cancel.push_back(id.get<std::string>());
    }
  }
  return out;
}

std::string percentEncode(const std::string& s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string registerPath() { return "/api/v1/agents/register"; }

std::string workPath(const std::string& host, int wait_s, const std::string& boot_id,
                     const std::string& running_id) {
  std::string path = "/api/v1/agents/" + percentEncode(host) +
                     "/work?wait=" + std::to_string(wait_s);
  if (!boot_id.empty()) path += "&boot_id=" + percentEncode(boot_id);
  if (!running_id.empty()) path += "&running=" + percentEncode(running_id);
  return path;
}

std::string resultPath(const std::string& assignment_id) {
  return "/api/v1/assignments/" + percentEncode(assignment_id) + "/result";
}

std::string outputPath(const std::string& assignment_id) {
  return "/api/v1/assignments/" + percentEncode(assignment_id) + "/output";
}

std::string dumpJson(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

json toJson(const StepReport& r) {
  namespace f = report_field;
  return json{{f::kLease, r.lease},
              {f::kHost, r.host},
              {f::kStarted, r.started},
              {f::kSpawnError, r.spawn_error},
              {f::kExitCode, r.exit_code},
              {f::kSignal, r.signal},
              {f::kTimedOut, r.timed_out},
              {f::kCancelled, r.cancelled},
              {f::kDurationMs, r.duration_ms},
              {f::kStdoutTail, r.stdout_tail},
              {f::kStderrTail, r.stderr_tail},
              {f::kStdoutBytes, r.stdout_bytes},
              {f::kStderrBytes, r.stderr_bytes},
              {f::kParsed, r.parsed},
              {f::kParseError, r.parse_error},
              {f::kBootId, r.boot_id},
              {f::kInventory, r.inventory},
              {f::kAgentNote, r.agent_note}};
}

}  // namespace kiln::protocol
