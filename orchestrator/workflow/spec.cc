#include "orchestrator/workflow/spec.h"

#include <charconv>

#include "common/agent_protocol.h"
#include "common/artifact_ref.h"

namespace kiln::workflow {

std::optional<Duration> parseDuration(std::string_view text) {
  if (text.empty()) return std::nullopt;
  std::int64_t total_ms = 0;
  std::size_t pos = 0;
  int last_rank = 100;  // units must come in decreasing order: 1h30m, not 30m1h
  while (pos < text.size()) {
    std::size_t digits_end = pos;
    while (digits_end < text.size() && text[digits_end] >= '0' && text[digits_end] <= '9') {
      ++digits_end;
    }
    if (digits_end == pos || digits_end - pos > 9) return std::nullopt;
    std::int64_t n = 0;
    std::from_chars(text.data() + pos, text.data() + digits_end, n);
    std::size_t unit_end = digits_end;
    while (unit_end < text.size() && text[unit_end] >= 'a' && text[unit_end] <= 'z') ++unit_end;
    std::string_view unit = text.substr(digits_end, unit_end - digits_end);
    std::int64_t factor = 0;
    int rank = 0;
    if (unit == "h") {
      factor = 3'600'000, rank = 4;
    } else if (unit == "m") {
      factor = 60'000, rank = 3;
    } else if (unit == "s") {
      factor = 1'000, rank = 2;
    } else if (unit == "ms") {
      factor = 1, rank = 1;
    } else {
      return std::nullopt;
    }
    if (rank >= last_rank) return std::nullopt;
    last_rank = rank;
    total_ms += n * factor;
    pos = unit_end;
  }
  return Duration{std::chrono::milliseconds(total_ms)};
}

std::string formatDuration(Duration d) {
  std::int64_t ms = d.value.count();
  if (ms == 0) return "0s";
  std::string out;
  if (ms < 0) {
    out = "-";
    ms = -ms;
  }
  const std::pair<std::int64_t, const char*> units[] = {
      {3'600'000, "h"}, {60'000, "m"}, {1'000, "s"}, {1, "ms"}};
  for (const auto& [factor, name] : units) {
    if (ms >= factor) {
      out += std::to_string(ms / factor) + name;
      ms %= factor;
    }
  }
  return out;
}

const char* scopeName(Scope s) { return s == Scope::kHost ? "host" : "pod"; }

const char* paramTypeName(ParamType t) {
  switch (t) {
    case ParamType::kString: return "string";
    case ParamType::kInt: return "int";
    case ParamType::kBool: return "bool";
    case ParamType::kDuration: return "duration";
    case ParamType::kArtifact: return "artifact";
  }
  return "string";
}

const char* stepTypeName(StepType t) {
  switch (t) {
    case StepType::kRun: return "run";
    case StepType::kReboot: return "reboot";
    case StepType::kBarrier: return "barrier";
    case StepType::kStage: return "stage";
  }
  return "run";
}

const char* onFailureName(OnFailure f) {
  switch (f) {
    case OnFailure::kFail: return "fail";
    case OnFailure::kContinue: return "continue";
    case OnFailure::kWarn: return "warn";
  }
  return "fail";
}

const char* runOnName(RunOn r) { return r == RunOn::kEach ? "each" : "leader"; }

const char* targetName(Target t) {
  switch (t) {
    case Target::kHost:
      return "host";
    case Target::kBmc:
      return "bmc";
    case Target::kSwitchTrays:
      return "switch_trays";
  }
  return "host";
}

const char* checkOpName(CheckOp op) {
  switch (op) {
    case CheckOp::kEq: return "eq";
    case CheckOp::kNe: return "ne";
    case CheckOp::kLt: return "lt";
    case CheckOp::kLe: return "le";
    case CheckOp::kGt: return "gt";
    case CheckOp::kGe: return "ge";
    case CheckOp::kIn: return "in";
    case CheckOp::kNotIn: return "not_in";
    case CheckOp::kMatches: return "matches";
    case CheckOp::kExists: return "exists";
    case CheckOp::kMaxIncrease: return "max_increase";
  }
  return "eq";
}

const std::vector<std::string>& knownParseFormats() {
  return protocol::parseFormatNames();
}

const std::vector<std::string>& knownContextFields() {
  static const std::vector<std::string> kFields = {
      "host.id",     "host.name",       "host.pod",          "host.rack", "host.tray",         "host.platform",
      "pod.id",      "pod.name",        "pod.hosts",         "host.bmc",  "host.bmc_protocol", "host.bmc_credential",
      "host.runner", "pod.switch_bmcs", "pod.bmc_credential"};
  return kFields;
}

std::optional<std::int64_t> parseInt(std::string_view text) {
  if (text.empty()) return std::nullopt;
  std::int64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return v;
}

bool isValidParamValue(ParamType t, std::string_view value) {
  switch (t) {
    case ParamType::kString: return true;
    case ParamType::kInt: return parseInt(value).has_value();
    case ParamType::kBool: return value == "true" || value == "false";
    case ParamType::kDuration: return parseDuration(value).has_value();
    case ParamType::kArtifact: return value.empty() || kiln::parseArtifactValue(value).ok();
  }
  return false;
}

const char* paramTypeExpectation(ParamType t) {
  switch (t) {
    case ParamType::kString: return "a string";
    case ParamType::kInt: return "an integer";
    case ParamType::kBool: return "true or false";
    case ParamType::kDuration: return "a duration like 30s or 15m";
    case ParamType::kArtifact:
      return "an artifact: an http(s) URL or absolute path with its sha256 (LOCATION#sha256=HEX), or empty";
  }
  return "a string";
}

const ParamSpec* WorkflowSpec::findParam(std::string_view name) const {
  for (const auto& p : params) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

const StepSpec* WorkflowSpec::findStep(std::string_view id) const {
  for (const auto& s : steps) {
    if (s.id == id) return &s;
  }
  return nullptr;
}

std::vector<std::string> WorkflowSpec::agreedPaths(std::string_view step_id) const {
  std::vector<std::string> out;
  for (const auto& s : steps)
    if (s.agree && s.agree->step == step_id) out.insert(out.end(), s.agree->paths.begin(), s.agree->paths.end());
  return out;
}

bool WorkflowSpec::isDeltaBaseline(std::string_view step_id) const {
  for (const auto& s : steps)
    for (const auto& c : s.checks)
      if (!c.delta_from.empty() && c.delta_from == step_id) return true;
  return false;
}

kiln::Result<ParamValues> resolveParams(const WorkflowSpec& spec, const ParamValues& given) {
  kiln::Error err = kiln::invalidArgument("");
  ParamValues out;
  for (const auto& [name, value] : given) {
    const ParamSpec* p = spec.findParam(name);
    if (p == nullptr) {
      err.fields.push_back({"params." + name, "workflow " + spec.name + " has no such parameter"});
    } else if (!isValidParamValue(p->type, value)) {
      err.fields.push_back({"params." + name, std::string("expected ") +
                                                  paramTypeExpectation(p->type) + ", got \"" +
                                                  value + "\""});
    } else {
      out[name] = value;
    }
  }
  for (const auto& p : spec.params) {
    if (given.contains(p.name)) continue;
    if (p.default_value) {
      out[p.name] = *p.default_value;
    } else {
      err.fields.push_back({"params." + p.name, "required (no default)"});
    }
  }
  if (!err.fields.empty()) {
    err.message = err.fields.front().path + ": " + err.fields.front().message;
    return err;
  }
  return out;
}

kiln::Result<Duration> resolveDuration(const DurationValue& v, const ParamValues& params) {
  if (v.param.empty()) return v.literal;
  auto it = params.find(v.param);
  if (it == params.end()) return kiln::invalidArgument("no value for parameter " + v.param);
  auto d = parseDuration(it->second);
  if (!d) {
    return kiln::invalidArgument("parameter " + v.param + ": expected a duration, got \"" +
                                 it->second + "\"");
  }
  return *d;
}

kiln::Result<std::int64_t> resolveInt(const IntValue& v, const ParamValues& params) {
  if (v.param.empty()) return v.literal;
  auto it = params.find(v.param);
  if (it == params.end()) return kiln::invalidArgument("no value for parameter " + v.param);
  auto n = parseInt(it->second);
  if (!n) {
    return kiln::invalidArgument("parameter " + v.param + ": expected an integer, got \"" +
                                 it->second + "\"");
  }
  return *n;
}

namespace {

nlohmann::json durationJson(const DurationValue& v) {
  if (!v.param.empty()) return "{{" + v.param + "}}";
  return formatDuration(v.literal);
}

nlohmann::json intJson(const IntValue& v) {
  if (!v.param.empty()) return "{{" + v.param + "}}";
  return v.literal;
}

nlohmann::json checkJson(const Check& c) {
  nlohmann::json j = {{"name", c.name}, {"path", c.path}};
  if (!c.description.empty()) j["description"] = c.description;
  if (!c.delta_from.empty()) {
    j["delta_from"] = c.delta_from;
    if (!c.fields.empty()) j["fields"] = c.fields;
  }
  j[checkOpName(c.op)] = c.expected;
  if (!c.when.empty()) j["when"] = c.when;
  if (!c.explain.empty()) j["explain"] = c.explain;
  return j;
}

nlohmann::json stepJson(const StepSpec& s) {
  nlohmann::json j = {{"id", s.id}, {"type", stepTypeName(s.type)}};
  if (!s.description.empty()) j["description"] = s.description;
  if (s.type == StepType::kStage) j["artifacts"] = s.artifacts;
  if (s.type != StepType::kBarrier && s.type != StepType::kStage) {
    j["run"] = s.run;
    j["expect_exit"] = s.expect_exit;
    j["retries"] = {{"count", s.retries.count}, {"backoff", formatDuration(s.retries.backoff)}};
  }
  j["timeout"] = durationJson(s.timeout);
  if (!s.parse.empty()) j["parse"] = s.parse;
  nlohmann::json checks = nlohmann::json::array();
  for (const auto& c : s.checks) checks.push_back(checkJson(c));
  j["checks"] = std::move(checks);
  j["on_failure"] = onFailureName(s.on_failure);
  j["run_on"] = runOnName(s.run_on);
  if (s.target != Target::kHost) j["target"] = targetName(s.target);
  if (!s.inventory.empty()) j["inventory"] = s.inventory;
  if (s.stdout_when_parsed) j["stdout_when_parsed"] = *s.stdout_when_parsed;
  if (s.agree) j["agree"] = {{"step", s.agree->step}, {"paths", s.agree->paths}};
  if (s.recover)
    j["recover"] = {{"power_cycles", s.recover->power_cycles}, {"timeout", formatDuration(s.recover->timeout)}};
  if (!s.when.empty()) j["when"] = s.when;
  if (s.retest) j["retest"] = {{"from", s.retest->from}, {"times", s.retest->times}};
  return j;
}

}  // namespace

nlohmann::json toJson(const WorkflowSpec& spec) {
  nlohmann::json params = nlohmann::json::object();
  for (const auto& p : spec.params) {
    nlohmann::json pj = {{"type", paramTypeName(p.type)}, {"description", p.description}};
    if (p.default_value) {
      switch (p.type) {
        case ParamType::kInt: pj["default"] = *parseInt(*p.default_value); break;
        case ParamType::kBool: pj["default"] = *p.default_value == "true"; break;
        default: pj["default"] = *p.default_value; break;
      }
    }
    params[p.name] = std::move(pj);
  }
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& s : spec.steps) steps.push_back(stepJson(s));
  nlohmann::json j = {
      {"name", spec.name},         {"version", spec.version},
      {"description", spec.description}, {"scope", scopeName(spec.scope)},
      {"params", std::move(params)},     {"steps", std::move(steps)},
      {"repeat", intJson(spec.repeat)},  {"soak_between", durationJson(spec.soak_between)},
      {"content_hash", spec.content_hash}};
  if (spec.timeout) j["timeout"] = durationJson(*spec.timeout);
  return j;
}

}  // namespace kiln::workflow
