#include "orchestrator/runs/report.h"

#include <limits>
#include <string>

#include "common/agent_protocol.h"

namespace kiln::runs {
namespace {

using nlohmann::json;

// Reads body[key] into `out` when present and not null; a value of another type is a field error.
class Reader {
 public:
  explicit Reader(const json& body) : body_(body) {}

  void boolean(const char* key, bool& out) {
    if (const json* v = find(key)) {
      if (v->is_boolean()) out = v->get<bool>();
      else fail(key, "expected true or false");
    }
  }
  void text(const char* key, std::string& out) {
    if (const json* v = find(key)) {
      if (v->is_string()) out = v->get<std::string>();
      else fail(key, "expected a string");
    }
  }
  template <typename Int>
  void whole(const char* key, Int& out, std::int64_t min, std::int64_t max) {
    if (const json* v = find(key)) {
      if (v->is_number_integer() && inRange(*v, min, max)) out = static_cast<Int>(v->get<std::int64_t>());
      else fail(key, "expected a whole number from " + std::to_string(min) + " to " + std::to_string(max));
    }
  }
  const json* find(const char* key) const {
    auto it = body_.find(key);
    return it == body_.end() || it->is_null() ? nullptr : &*it;
  }
  void fail(const std::string& key, const std::string& message) { errors_.push_back({key, message}); }
  std::vector<FieldError>& errors() { return errors_; }

 private:
  static bool inRange(const json& v, std::int64_t min, std::int64_t max) {
    if (v.is_number_unsigned()) return v.get<std::uint64_t>() <= static_cast<std::uint64_t>(max);
    const std::int64_t n = v.get<std::int64_t>();
    return n >= min && n <= max;
  }

  const json& body_;
  std::vector<FieldError> errors_;
};

constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();
constexpr std::int64_t kIntMin = std::numeric_limits<int>::min();

}  // namespace

Result<StepReport> decodeStepReport(const json& body) {
  namespace f = protocol::report_field;
  if (!body.is_object()) {
    Error e = invalidContent("expected a JSON object");
    e.fields.push_back({"", "expected a JSON object"});
    return e;
  }
  StepReport r;
  Reader in(body);
  if (!in.find(f::kLease)) in.fail(f::kLease, "the report needs its lease");
  else in.whole(f::kLease, r.lease, 0, kIntMax);
  in.boolean(f::kReady, r.ready);
  StepResult& s = r.result;
  in.boolean(f::kStarted, s.started);
  in.text(f::kSpawnError, s.spawn_error);
  in.whole(f::kExitCode, s.exit_code, kIntMin, kIntMax);
  in.whole(f::kSignal, s.signal, 0, 255);
  in.boolean(f::kTimedOut, s.timed_out);
  in.boolean(f::kCancelled, s.cancelled);
  in.whole(f::kDurationMs, s.duration_ms, 0, std::numeric_limits<std::int64_t>::max());
  in.text(f::kStdoutTail, s.stdout_tail);
  in.text(f::kStderrTail, s.stderr_tail);
  if (const json* parsed = in.find(f::kParsed)) s.parsed = *parsed;
  in.text(f::kParseError, s.parse_error);
  in.text(f::kAgentNote, s.note);
  if (!in.errors().empty()) {
    Error e = invalidContent("invalid report: " + in.errors()[0].path + ": " + in.errors()[0].message);
    e.fields = std::move(in.errors());
    // The one-field form as well (details.field), as agents and scripts read it.
    if (e.fields.size() == 1) e.with("field", e.fields[0].path);
    return e;
  }
  return r;
}

StepResult storedStepResult(const json& b, bool tails) {
  namespace f = protocol::report_field;
  StepResult r;
  auto get = [&b]<typename T>(const char* key, T fallback) -> T {
    auto it = b.find(key);
    if (it == b.end()) return fallback;
    if constexpr (std::is_same_v<T, bool>) return it->is_boolean() ? it->template get<bool>() : fallback;
    else if constexpr (std::is_same_v<T, std::string>) return it->is_string() ? it->template get<std::string>() : fallback;
    else return it->is_number_integer() ? it->template get<T>() : fallback;
  };
  r.started = get(f::kStarted, true);
  r.spawn_error = get(f::kSpawnError, std::string());
  r.exit_code = get(f::kExitCode, -1);
  r.signal = get(f::kSignal, 0);
  r.timed_out = get(f::kTimedOut, false);
  r.cancelled = get(f::kCancelled, false);
  r.duration_ms = get(f::kDurationMs, std::int64_t{0});
  if (tails) {
    r.stdout_tail = get(f::kStdoutTail, std::string());
    r.stderr_tail = get(f::kStderrTail, std::string());
  }
  r.parsed = b.contains(f::kParsed) ? b[f::kParsed] : json();
  r.parse_error = get(f::kParseError, std::string());
  r.note = get(f::kAgentNote, std::string());
  return r;
}

}  // namespace kiln::runs
