#include "common/agent_protocol.h"

#include <algorithm>

#include "common/artifact_ref.h"

#include <cctype>
#include <limits>
#include <optional>
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

// kInvalidContent "<what>: <first field>: <its message>" with every bad field (the REST error
// body's shape: api/codecs.cc builds its own the same way).
Error invalidFields(const std::string& what, std::vector<FieldError> fields, bool one_field_detail) {
  Error bad = invalidContent(what + ": " + (fields[0].path.empty() ? "" : fields[0].path + ": ") + fields[0].message);
  bad.fields = std::move(fields);
  if (one_field_detail && bad.fields.size() == 1) bad.with("field", bad.fields[0].path);
  return bad;
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
  auto parsed_cap = field<std::int64_t>(j, "parsed_output_cap", -1);
  auto inventory_after = field<bool>(j, "inventory_after", false);
  auto artifacts = field<json>(j, "artifacts", json::array());
  for (const Error* e : {lease ? nullptr : &lease.error(), run_id ? nullptr : &run_id.error(),
                         step_id ? nullptr : &step_id.error(),
                         attempt ? nullptr : &attempt.error(), type ? nullptr : &type.error(),
                         argv ? nullptr : &argv.error(), timeout ? nullptr : &timeout.error(),
                         grace ? nullptr : &grace.error(), parse ? nullptr : &parse.error(),
                         cap ? nullptr : &cap.error(), parsed_cap ? nullptr : &parsed_cap.error(),
                         inventory_after ? nullptr : &inventory_after.error(),
                         artifacts ? nullptr : &artifacts.error()}) {
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
  if (a.type != "run" && a.type != "reboot" && a.type != "stage") {
    return invalidContent("assignment " + a.id + ": unknown type '" + a.type + "'");
  }
  if (!artifacts->is_array()) return invalidContent("assignment " + a.id + ": 'artifacts' is not an array");
  for (const json& item : *artifacts) {
    const auto str = [&](const char* name) -> std::optional<std::string> {
      if (!item.is_object()) return std::nullopt;
      auto it = item.find(name);
      if (it == item.end() || it->is_null()) return std::string();
      if (!it->is_string()) return std::nullopt;
      return it->get<std::string>();
    };
    auto url = str("url"), sha = str("sha256"), sums = str("checksums"), sig = str("signature");
    if (!url || !sha || !sums || !sig || url->empty() || !isSha256Hex(*sha))
      return invalidContent("assignment " + a.id + ": artifact " + std::to_string(a.artifacts.size()) +
                            " needs a url and a sha256 of 64 hex digits (checksums and signature: strings)");
    a.artifacts.push_back({*url, *sha, *sums, *sig});
  }
  if (a.isStage() && a.artifacts.empty()) return invalidContent("assignment " + a.id + ": a stage names no artifact");
  if (!a.isStage() && (a.argv.empty() || a.argv.front().empty())) {
    return invalidContent("assignment " + a.id + ": empty argv");
  }
  if (a.timeout_ms < 0 || a.kill_grace_ms < 0 || *cap < 0) {
    return invalidContent("assignment " + a.id + ": negative timeout, grace or output_cap");
  }
  a.output_cap = std::min<std::size_t>(static_cast<std::size_t>(*cap), kMaxOutputCap);
  // Absent (or null): the whole tail; a negative one is as bad as a negative output_cap.
  if (j.contains("parsed_output_cap") && !j.at("parsed_output_cap").is_null()) {
    if (*parsed_cap < 0) return invalidContent("assignment " + a.id + ": negative parsed_output_cap");
    a.parsed_output_cap = std::min<std::size_t>(static_cast<std::size_t>(*parsed_cap), a.output_cap);
  }
  return a;
}

json toJson(const Assignment& a) {
  json out{{"id", a.id},
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
  if (a.parsed_output_cap) out["parsed_output_cap"] = *a.parsed_output_cap;
  if (!a.artifacts.empty()) {
    json& list = out["artifacts"] = json::array();
    for (const auto& r : a.artifacts)
      list.push_back({{"url", r.url}, {"sha256", r.sha256}, {"checksums", r.checksums}, {"signature", r.signature}});
  }
  return out;
}

void trimParsedStdout(const Assignment& a, StepReport& r) {
  if (!a.parsed_output_cap || !r.started || r.exit_code != 0 || r.signal != 0 || r.timed_out || r.cancelled ||
      !r.parse_error.empty() || r.parsed.is_null())
    return;
  const std::size_t cap = *a.parsed_output_cap;
  if (r.stdout_tail.size() <= cap) return;
  std::size_t from = r.stdout_tail.size() - cap;
  // Not into the middle of a character: skip UTF-8 continuation bytes (10xxxxxx).
  while (from < r.stdout_tail.size() && (static_cast<unsigned char>(r.stdout_tail[from]) & 0xC0) == 0x80) ++from;
  r.stdout_tail.erase(0, from);
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

std::string renewPath(const std::string& host) { return "/api/v1/agents/" + percentEncode(host) + "/token"; }

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

json toJson(const Registration& r) {
  return json{{"host", r.host}, {"boot_id", r.boot_id}, {"agent_version", r.agent_version}, {"inventory", r.inventory}};
}

Result<Registration> registrationFromJson(const json& body) {
  if (!body.is_object()) {
    return invalidFields("invalid registration",
                         {{"", "expected a JSON object {host, boot_id, agent_version, inventory}"}},
                         /*one_field_detail=*/false);
  }
  std::vector<FieldError> bad;
  for (const auto& [k, _] : body.items())
    if (k != "host" && k != "boot_id" && k != "agent_version" && k != "inventory") bad.push_back({k, "unknown field"});
  Registration out;
  if (auto it = body.find("host"); it == body.end() || !it->is_string() || it->get_ref<const std::string&>().empty())
    bad.push_back({"host", "is required (a host id)"});
  else
    out.host = it->get<std::string>();
  const auto text = [&](const char* key, std::string& to) {
    auto it = body.find(key);
    if (it == body.end()) return;
    if (!it->is_string() || it->get_ref<const std::string&>().size() > 256)
      bad.push_back({key, "expected a string of at most 256 characters"});
    else
      to = it->get<std::string>();
  };
  text("boot_id", out.boot_id);
  text("agent_version", out.agent_version);
  if (auto it = body.find("inventory"); it != body.end()) {
    if (it->is_object())
      out.inventory = *it;
    else if (!it->is_null())
      bad.push_back({"inventory", "expected an object"});
  }
  if (!bad.empty()) return invalidFields("invalid registration", std::move(bad), /*one_field_detail=*/true);
  return out;
}

json toJson(const Enrolment& e) {
  json j{{"host", e.host}, {"token", e.token}, {"token_id", e.token_id}};
  if (e.expires_in_s > 0) j["expires_in_s"] = e.expires_in_s;
  return j;
}

Result<Enrolment> enrolmentFromBody(const std::string& body) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return invalidContent("the registration answer is not a JSON object");
  Enrolment e;
  auto token = j.find("token");
  if (token == j.end() || !token->is_string() || token->get_ref<const std::string&>().empty())
    return invalidContent("the registration answer has no token");
  e.token = token->get<std::string>();
  if (auto it = j.find("host"); it != j.end() && it->is_string()) e.host = it->get<std::string>();
  if (auto it = j.find("token_id"); it != j.end() && it->is_string()) e.token_id = it->get<std::string>();
  if (auto it = j.find("expires_in_s"); it != j.end() && it->is_number_integer() && it->get<std::int64_t>() > 0)
    e.expires_in_s = it->get<std::int64_t>();
  return e;
}

std::string_view reportOutcomeName(ReportOutcome o) {
  switch (o) {
    case ReportOutcome::kAccepted:
      return "accepted";
    case ReportOutcome::kDuplicate:
      return "duplicate";
    case ReportOutcome::kCancelled:
      return "cancelled";
  }
  return "accepted";
}

json toJson(const ReportReply& r) {
  json j = {{"acknowledged", true}, {"outcome", std::string(reportOutcomeName(r.outcome))}};
  if (r.assignment) j["assignment"] = *r.assignment;
  return j;
}

Result<ReportReply> reportReplyFromBody(const std::string& body) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return invalidContent("the report answer is not a JSON object");
  ReportReply r;
  auto outcome = j.find("outcome");
  if (outcome == j.end() || outcome->is_null()) {
    // A 200 without one (kilnd before the outcome was said) took the report.
  } else if (!outcome->is_string()) {
    return invalidContent("the report answer's outcome is not a string");
  } else if (const auto& name = outcome->get_ref<const std::string&>(); name == "accepted") {
    r.outcome = ReportOutcome::kAccepted;
  } else if (name == "duplicate") {
    r.outcome = ReportOutcome::kDuplicate;
  } else if (name == "cancelled") {
    r.outcome = ReportOutcome::kCancelled;
  } else {
    return invalidContent("the report answer's outcome '" + name + "' is not accepted, duplicate or cancelled");
  }
  if (auto it = j.find("assignment"); it != j.end() && it->is_object()) r.assignment = std::move(*it);
  return r;
}

const std::vector<std::string>& parseFormatNames() {
  static const std::vector<std::string> kNames = {"nvidia-smi-xml", "dcgmi-diag-json", "dcgmi-nvlink-json", "json",
                                                  "key-value"};
  return kNames;
}

}  // namespace kiln::protocol
