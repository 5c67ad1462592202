#include "orchestrator/retention/retention.h"

#include <set>

namespace kiln::retention {
namespace {

constexpr std::chrono::hours kLongestRule{24 * 36500};  // 100 years

std::optional<Kind> kindFromName(const std::string& name) {
  for (Kind k : kKinds)
    if (name == kindName(k)) return k;
  return std::nullopt;
}

// "90d", "12h", "30m": a whole number and one unit. nullopt when it is not that.
std::optional<std::chrono::seconds> parseAge(const std::string& text) {
  if (text.size() < 2 || text.size() > 12) return std::nullopt;
  const char unit = text.back();
  std::int64_t n = 0;
  for (std::size_t i = 0; i + 1 < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
    n = n * 10 + (text[i] - '0');
  }
  switch (unit) {
    case 'm':
      return std::chrono::minutes(n);
    case 'h':
      return std::chrono::hours(n);
    case 'd':
      return std::chrono::hours(24 * n);
    default:
      return std::nullopt;
  }
}

std::string ageText(std::chrono::seconds s) {
  const auto n = s.count();
  if (n % 86400 == 0) return std::to_string(n / 86400) + "d";
  if (n % 3600 == 0) return std::to_string(n / 3600) + "h";
  return std::to_string(n / 60) + "m";
}

}  // namespace

const char* kindName(Kind k) {
  switch (k) {
    case Kind::kRuns:
      return "runs";
    case Kind::kPreJobRuns:
      return "pre_job_runs";
    case Kind::kHostEvents:
      return "host_events";
    case Kind::kAudit:
      return "audit";
    case Kind::kRolloutEvents:
      return "rollout_events";
    case Kind::kIdempotencyKeys:
      return "idempotency_keys";
  }
  return "?";
}

Result<Policy> parsePolicy(const std::string& spec) {
  Policy p;
  if (spec.empty()) return p;
  std::set<Kind> seen;
  std::size_t at = 0;
  while (at <= spec.size()) {
    const auto comma = spec.find(',', at);
    const std::string item = spec.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    at = comma == std::string::npos ? spec.size() + 1 : comma + 1;
    const auto eq = item.find('=');
    if (eq == std::string::npos)
      return invalidArgument("--retention: '" + item + "' is not KIND=DURATION (e.g. runs=90d)");
    const std::string name = item.substr(0, eq), value = item.substr(eq + 1);
    const auto kind = kindFromName(name);
    if (!kind) {
      std::string kinds;
      for (Kind k : kKinds) kinds += (kinds.empty() ? "" : ", ") + std::string(kindName(k));
      return invalidArgument("--retention: unknown kind '" + name + "' (expected one of " + kinds + ")");
    }
    if (!seen.insert(*kind).second) return invalidArgument("--retention: '" + name + "' is given twice");
    if (value == "forever") {
      p.keep[*kind] = std::nullopt;
      continue;
    }
    const auto age = parseAge(value);
    if (!age)
      return invalidArgument("--retention: " + name + "=" + value +
                             ": expected a duration like 90d, 12h or 30m, or forever");
    if (*age < std::chrono::hours(1))
      return invalidArgument("--retention: " + name + "=" + value +
                             ": at least 1h (rows younger than that are never pruned)");
    // now - keep in the clock's nanoseconds: 2,700 years already wrap past the epoch, and a
    // wrapped cutoff in the future would make every finished row old enough.
    if (*age > kLongestRule)
      return invalidArgument("--retention: " + name + "=" + value + ": at most 36500d (use forever to keep them)");
    p.keep[*kind] = *age;
  }
  return p;
}

std::string describe(const Policy& p) {
  std::string out;
  for (Kind k : kKinds) {
    const auto it = p.keep.find(k);
    const bool forever = it == p.keep.end() || !it->second;
    out += (out.empty() ? "" : ",") + std::string(kindName(k)) + "=" + (forever ? "forever" : ageText(*it->second));
  }
  return out;
}

std::map<Kind, TimePoint> cutoffs(const Policy& p, TimePoint now, bool audit_exported) {
  std::map<Kind, TimePoint> out;
  for (const auto& [kind, keep] : p.keep) {
    if (!keep) continue;
    if (kind == Kind::kAudit && !audit_exported) continue;  // never pruned without its export
    out[kind] = now - *keep;
  }
  return out;
}

}  // namespace kiln::retention
