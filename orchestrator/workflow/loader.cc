#include "orchestrator/workflow/loader.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <openssl/evp.h>
#include <yaml-cpp/yaml.h>

#include "common/component_kinds.h"
#include "common/yaml_json.h"
#include "orchestrator/workflow/checks.h"
#include "orchestrator/workflow/substitute.h"

namespace kiln::workflow {
namespace {

using nlohmann::json;

struct Problem {
  int line = 0;
  int column = 0;
  std::string path;
  std::string message;
};

// A mapping's entries by key, with the key node kept for its position.
struct Entry {
  YAML::Node key;
  YAML::Node value;
};
using Entries = std::map<std::string, Entry>;

std::string quoteText(const std::string& s) {
  return json(s).dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string describeNode(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "nothing";
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a mapping";
  return quoteText(n.Scalar());
}

std::string joinPath(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

std::string listOf(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

bool isPlainScalar(const YAML::Node& n) { return n.IsScalar() && n.Tag() != "!"; }

// A YAML scalar as JSON: quoted scalars stay strings; plain ones become null, bool or number
// when they read as one.
json scalarToJson(const YAML::Node& n) {
  const std::string& s = n.Scalar();
  if (!isPlainScalar(n)) return s;
  if (s == "~" || s == "null") return nullptr;
  if (s == "true") return true;
  if (s == "false") return false;
  if (auto i = parseInt(s)) return *i;
  static const std::regex kFloat(R"(-?[0-9]+\.[0-9]+([eE][-+]?[0-9]+)?)");
  if (std::regex_match(s, kFloat)) return std::stod(s);
  return s;
}

const std::regex kNameRe("[a-z0-9][a-z0-9_-]*");
const std::regex kFirmwareIdRe("[A-Za-z0-9._-]{1,64}");
// A compute tray's component kinds, as a read-back's `inventory` names them.
const std::vector<std::string> kHostKinds(components::kHostKinds.begin(), components::kHostKinds.end());
const std::regex kParamNameRe("[a-z_][a-z0-9_]*");

struct StepIndex {
  std::size_t position = 0;
  bool has_parse = false;
  int line = 0;
};

class Validator {
 public:
  explicit Validator(std::string source) : source_(std::move(source)) {}

  const std::vector<Problem>& problems() const { return problems_; }

  WorkflowSpec load(const YAML::Node& root) {
    WorkflowSpec spec;
    if (!root.IsMap()) {
      error(root.Mark(), "", "expected a mapping with name, version, scope and steps, got " +
                                 describeNode(root));
      return spec;
    }
    Entries top = entries(root, "",
                          {"name", "version", "description", "scope", "params", "steps", "repeat",
                           "soak_between", "timeout"});
    if (auto* e = required(top, "name", root, "")) {
      if (auto s = text(e->value, "name")) {
        if (!std::regex_match(*s, kNameRe)) {
          error(e->value.Mark(), "name",
                "expected lowercase letters, digits, '-' and '_', got " + quoteText(*s));
        }
        spec.name = *s;
      }
    }
    if (auto* e = required(top, "version", root, "")) {
      if (auto s = text(e->value, "version")) spec.version = *s;
    }
    if (auto* e = optional(top, "description")) {
      if (auto s = text(e->value, "description")) spec.description = *s;
    }
    if (auto* e = required(top, "scope", root, "")) {
      if (auto s = text(e->value, "scope")) {
        if (*s == "host") {
          spec.scope = Scope::kHost;
        } else if (*s == "pod") {
          spec.scope = Scope::kPod;
        } else {
          error(e->value.Mark(), "scope", "expected host or pod, got " + quoteText(*s));
        }
      }
    }
    scope_ = spec.scope;
    if (auto* e = optional(top, "params")) spec.params = params(e->value);
    params_ = &spec.params;
    if (auto* e = optional(top, "repeat")) {
      if (auto v = intValue(e->value, "repeat", 1, 100)) spec.repeat = *v;
    }
    if (auto* e = optional(top, "soak_between")) {
      if (auto v = durationValue(e->value, "soak_between")) spec.soak_between = *v;
    }
    if (auto* e = optional(top, "timeout")) {
      if (auto v = durationValue(e->value, "timeout")) spec.timeout = *v;
    }
    if (auto* e = required(top, "steps", root, "")) spec.steps = steps(e->value);
    return spec;
  }

 private:
  void error(const YAML::Mark& mark, const std::string& path, std::string message) {
    Problem p;
    if (!mark.is_null()) {
      p.line = mark.line + 1;
      p.column = mark.column + 1;
    }
    p.path = path;
    p.message = std::move(message);
    problems_.push_back(std::move(p));
  }

  // The entries of mapping `node` at `path`; unknown and duplicate keys are errors.
  Entries entries(const YAML::Node& node, const std::string& path,
                  const std::vector<std::string>& allowed) {
    Entries out;
    // Range-for keeps each key/value pair alive; `it->first` would point into a temporary.
    for (const auto& kv : node) {
      const YAML::Node& k = kv.first;
      if (!k.IsScalar()) {
        error(k.Mark(), path, "expected a plain key, got " + describeNode(k));
        continue;
      }
      const std::string& key = k.Scalar();
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        error(k.Mark(), joinPath(path, key),
              "unknown key " + quoteText(key) + " (expected one of: " + listOf(allowed) + ")");
        continue;
      }
      if (out.contains(key)) {
        error(k.Mark(), joinPath(path, key),
              "duplicate key " + quoteText(key) + " (first at line " +
                  std::to_string(out[key].key.Mark().line + 1) + ")");
        continue;
      }
      out[key] = Entry{k, kv.second};
    }
    return out;
  }

  Entry* required(Entries& e, const std::string& key, const YAML::Node& parent,
                  const std::string& path) {
    auto it = e.find(key);
    if (it == e.end()) {
      error(parent.Mark(), joinPath(path, key), "required key " + quoteText(key) + " is missing");
      return nullptr;
    }
    return &it->second;
  }

  static Entry* optional(Entries& e, const std::string& key) {
    auto it = e.find(key);
    return it == e.end() ? nullptr : &it->second;
  }

  std::optional<std::string> text(const YAML::Node& n, const std::string& path,
                                  const char* expected = "a string") {
    if (!n.IsScalar()) {
      error(n.Mark(), path, std::string("expected ") + expected + ", got " + describeNode(n));
      return std::nullopt;
    }
    return n.Scalar();
  }

  std::optional<std::int64_t> integer(const YAML::Node& n, const std::string& path,
                                      std::int64_t lo, std::int64_t hi) {
    std::string expected = "an integer from " + std::to_string(lo) + " to " + std::to_string(hi);
    auto v = n.IsScalar() ? parseInt(n.Scalar()) : std::nullopt;
    if (!v || *v < lo || *v > hi) {
      error(n.Mark(), path, "expected " + expected + ", got " + describeNode(n));
      return std::nullopt;
    }
    return v;
  }

  std::optional<bool> boolean(const YAML::Node& n, const std::string& path) {
    if (isPlainScalar(n) && (n.Scalar() == "true" || n.Scalar() == "false")) {
      return n.Scalar() == "true";
    }
    error(n.Mark(), path, "expected true or false, got " + describeNode(n));
    return std::nullopt;
  }

  // `{{p}}` where p must be a declared parameter of type `type`; "" if `s` is not a sole
  // reference; nullopt after reporting an error.
  std::optional<std::string> paramReference(const std::string& s, ParamType type,
                                            const YAML::Node& n, const std::string& path) {
    std::string ref = soleReference(s);
    if (ref.empty()) return std::string();
    const ParamSpec* p = findParam(ref);
    if (p == nullptr) {
      error(n.Mark(), path, "undeclared parameter " + quoteText(ref) + declaredParams());
      return std::nullopt;
    }
    if (p->type != type) {
      error(n.Mark(), path,
            "parameter " + quoteText(ref) + " has type " + paramTypeName(p->type) + ", expected " +
                paramTypeName(type));
      return std::nullopt;
    }
    return ref;
  }

  std::optional<DurationValue> durationValue(const YAML::Node& n, const std::string& path) {
    auto s = text(n, path, "a duration like 30s or 15m");
    if (!s) return std::nullopt;
    auto ref = paramReference(*s, ParamType::kDuration, n, path);
    if (!ref) return std::nullopt;
    if (!ref->empty()) return DurationValue{{}, *ref};
    auto d = parseDuration(*s);
    if (!d) {
      error(n.Mark(), path, "expected a duration like 30s or 15m, got " + quoteText(*s));
      return std::nullopt;
    }
    return DurationValue{*d, {}};
  }

  std::optional<IntValue> intValue(const YAML::Node& n, const std::string& path, std::int64_t lo,
                                   std::int64_t hi) {
    if (n.IsScalar()) {
      auto ref = paramReference(n.Scalar(), ParamType::kInt, n, path);
      if (!ref) return std::nullopt;
      if (!ref->empty()) return IntValue{0, *ref};
    }
    auto v = integer(n, path, lo, hi);
    if (!v) return std::nullopt;
    return IntValue{*v, {}};
  }

  const ParamSpec* findParam(const std::string& name) const {
    if (params_ == nullptr) return nullptr;
    for (const auto& p : *params_) {
      if (p.name == name) return &p;
    }
    return nullptr;
  }

  std::string declaredParams() const {
    std::vector<std::string> names;
    if (params_ != nullptr) {
      for (const auto& p : *params_) names.push_back(p.name);
    }
    return names.empty() ? " (no params are declared)" : " (declared: " + listOf(names) + ")";
  }

  // Every reference in `s` must be a declared parameter, or (when allow_context) a known
  // host/pod field.
  void templates(const std::string& s, const YAML::Node& n, const std::string& path,
                 bool allow_context) {
    auto names = templateNames(s);
    if (!names.ok()) {
      error(n.Mark(), path, names.error().message);
      return;
    }
    for (const auto& name : *names) {
      if (name.starts_with("host.") || name.starts_with("pod.")) {
        const auto& known = knownContextFields();
        if (!allow_context) {
          error(n.Mark(), path, "{{" + name + "}}: host and pod fields are not available here, "
                                "only parameters");
        } else if (std::find(known.begin(), known.end(), name) == known.end()) {
          error(n.Mark(), path, "unknown field " + quoteText(name) + " (known: " + listOf(known) + ")");
        } else if (name == "pod.hosts" && scope_ != Scope::kPod) {
          error(n.Mark(), path, "{{pod.hosts}} needs scope: pod");
        }
      } else if (findParam(name) == nullptr) {
        error(n.Mark(), path, "undeclared parameter " + quoteText(name) + declaredParams());
      }
    }
  }

  std::vector<ParamSpec> params(const YAML::Node& n) {
    std::vector<ParamSpec> out;
    if (!n.IsMap()) {
      error(n.Mark(), "params", "expected a mapping of name -> {type, default, description}, got " +
                                    describeNode(n));
      return out;
    }
    std::set<std::string> seen;
    for (const auto& kv : n) {
      if (!kv.first.IsScalar()) {
        error(kv.first.Mark(), "params", "expected a parameter name");
        continue;
      }
      const std::string name = kv.first.Scalar();
      const std::string path = "params." + name;
      if (!seen.insert(name).second) {
        error(kv.first.Mark(), path, "duplicate parameter " + quoteText(name));
        continue;
      }
      if (!std::regex_match(name, kParamNameRe)) {
        error(kv.first.Mark(), path,
              "expected a parameter name of lowercase letters, digits and '_', got " +
                  quoteText(name));
        continue;
      }
      if (name == "host" || name == "pod") {
        error(kv.first.Mark(), path, quoteText(name) + " is reserved for host/pod fields");
        continue;
      }
      const YAML::Node& body = kv.second;
      if (!body.IsMap()) {
        error(body.Mark(), path,
              "expected a mapping {type, default, description}, got " + describeNode(body));
        continue;
      }
      ParamSpec p;
      p.name = name;
      Entries e = entries(body, path, {"type", "default", "description"});
      bool type_ok = false;
      if (auto* t = required(e, "type", body, path)) {
        if (auto s = text(t->value, path + ".type")) {
          const std::pair<const char*, ParamType> kTypes[] = {{"string", ParamType::kString},
                                                              {"int", ParamType::kInt},
                                                              {"bool", ParamType::kBool},
                                                              {"duration", ParamType::kDuration},
                                                              {"artifact", ParamType::kArtifact}};
          for (const auto& [tn, tv] : kTypes) {
            if (*s == tn) p.type = tv, type_ok = true;
          }
          if (!type_ok) {
            error(t->value.Mark(), path + ".type",
                  "expected string, int, bool, duration or artifact, got " + quoteText(*s));
          }
        }
      }
      if (auto* d = optional(e, "default")) {
        if (d->value.IsNull() && (p.type == ParamType::kString || p.type == ParamType::kArtifact)) {
          p.default_value = "";
        } else if (auto s = text(d->value, path + ".default")) {
          if (type_ok && !isValidParamValue(p.type, *s)) {
            error(d->value.Mark(), path + ".default",
                  std::string("expected ") + paramTypeExpectation(p.type) + ", got " + quoteText(*s));
          } else {
            p.default_value = *s;
          }
        }
      }
      if (auto* d = optional(e, "description")) {
        if (auto s = text(d->value, path + ".description")) p.description = *s;
      }
      out.push_back(std::move(p));
    }
    return out;
  }

  std::vector<StepSpec> steps(const YAML::Node& n) {
    std::vector<StepSpec> out;
    if (!n.IsSequence() || n.size() == 0) {
      error(n.Mark(), "steps", "expected a non-empty list of steps, got " + describeNode(n));
      return out;
    }
    // First pass: every step id and where it is, so delta_from/retest can tell "later" from
    // "missing".
    for (std::size_t i = 0; i < n.size(); ++i) {
      const YAML::Node& s = n[i];
      if (!s.IsMap()) continue;
      YAML::Node id;
      bool has_parse = false;
      for (const auto& kv : s) {
        if (!kv.first.IsScalar()) continue;
        if (kv.first.Scalar() == "id") id = kv.second;
        if (kv.first.Scalar() == "parse") has_parse = true;
      }
      if (id && id.IsScalar() && !step_index_.contains(id.Scalar())) {
        step_index_[id.Scalar()] = StepIndex{i, has_parse, id.Mark().line + 1};
      }
    }
    for (std::size_t i = 0; i < n.size(); ++i) out.push_back(step(n[i], i));
    return out;
  }

  // `key` is not allowed in steps of this type.
  void forbid(const Entries& e, const std::string& key, const std::string& path,
              const char* what) {
    auto it = e.find(key);
    if (it != e.end()) {
      error(it->second.key.Mark(), joinPath(path, key), std::string("not allowed in ") + what);
    }
  }

  StepSpec step(const YAML::Node& n, std::size_t index) {
    StepSpec s;
    const std::string path = "steps[" + std::to_string(index) + "]";
    if (!n.IsMap()) {
      error(n.Mark(), path, "expected a step mapping with id, run and timeout, got " +
                                describeNode(n));
      return s;
    }
    s.mark = {n.Mark().line + 1, n.Mark().column + 1};
    Entries e =
        entries(n, path,
                {"id", "description", "type", "run", "timeout", "retries", "expect_exit", "parse", "checks",
                 "on_failure", "run_on", "when", "retest", "artifacts", "target", "recover", "agree", "inventory",
                 "stdout_when_parsed"});
    if (auto* id = required(e, "id", n, path)) {
      if (auto v = text(id->value, path + ".id")) {
        s.id = *v;
        if (!std::regex_match(*v, kNameRe)) {
          error(id->value.Mark(), path + ".id",
                "expected lowercase letters, digits, '-' and '_', got " + quoteText(*v));
        }
        auto first = step_index_.find(*v);
        if (first != step_index_.end() && first->second.position != index) {
          error(id->value.Mark(), path + ".id",
                "duplicate step id " + quoteText(*v) + " (first at line " +
                    std::to_string(first->second.line) + ")");
        }
      }
    }
    if (auto* d = optional(e, "description")) {
      if (auto v = text(d->value, path + ".description")) s.description = *v;
    }
    if (auto* t = optional(e, "type")) {
      if (auto v = text(t->value, path + ".type")) {
        if (*v == "run") {
          s.type = StepType::kRun;
        } else if (*v == "reboot") {
          s.type = StepType::kReboot;
        } else if (*v == "stage") {
          s.type = StepType::kStage;
        } else if (*v == "barrier") {
          s.type = StepType::kBarrier;
          if (scope_ != Scope::kPod) {
            error(t->value.Mark(), path + ".type",
                  "barrier steps need scope: pod (this workflow has scope: host)");
          }
        } else {
          error(t->value.Mark(), path + ".type",
                "expected run, reboot, barrier or stage, got " + quoteText(*v));
        }
      }
    }
    if (s.type == StepType::kBarrier) {
      for (const char* k : {"run", "retries", "expect_exit", "parse", "checks", "retest"}) {
        forbid(e, k, path, "a barrier step");
      }
    } else if (s.type == StepType::kReboot) {
      for (const char* k : {"parse", "checks", "retest"}) forbid(e, k, path, "a reboot step");
    } else if (s.type == StepType::kStage) {
      for (const char* k : {"run", "expect_exit", "parse", "checks", "retest"}) forbid(e, k, path, "a stage step");
      if (auto* a = required(e, "artifacts", n, path)) s.artifacts = stageArtifacts(a->value, path + ".artifacts");
    }
    if (s.type != StepType::kStage) forbid(e, "artifacts", path, "a run, reboot or barrier step (only stage steps list artifacts)");
    if (s.type != StepType::kBarrier && s.type != StepType::kStage) {
      if (s.type == StepType::kReboot && !e.contains("run")) {
        s.run = {"kiln-reboot"};
      } else if (auto* r = required(e, "run", n, path)) {
        s.run = argv(r->value, path + ".run");
      }
    }
    if (auto* t = required(e, "timeout", n, path)) {
      if (auto v = durationValue(t->value, path + ".timeout")) s.timeout = *v;
    }
    if (s.type != StepType::kBarrier) {
      if (auto* r = optional(e, "retries")) s.retries = retries(r->value, path + ".retries");
      if (auto* x = optional(e, "expect_exit")) s.expect_exit = exitCodes(x->value, path + ".expect_exit");
    }
    if (s.type == StepType::kRun) {
      if (auto* p = optional(e, "parse")) {
        if (auto v = text(p->value, path + ".parse")) {
          const auto& formats = knownParseFormats();
          if (std::find(formats.begin(), formats.end(), *v) == formats.end()) {
            error(p->value.Mark(), path + ".parse",
                  "expected one of " + listOf(formats) + ", got " + quoteText(*v));
          } else {
            s.parse = *v;
          }
        }
      }
      if (auto* c = optional(e, "checks")) {
        if (!e.contains("parse")) {
          error(c->key.Mark(), path + ".checks", "checks need a parse format (add parse: ...)");
        }
        s.checks = checks(c->value, path + ".checks", index);
      }
    }
    if (auto* f = optional(e, "on_failure")) {
      if (auto v = text(f->value, path + ".on_failure")) {
        if (*v == "fail") {
          s.on_failure = OnFailure::kFail;
        } else if (*v == "continue") {
          s.on_failure = OnFailure::kContinue;
        } else if (*v == "warn") {
          s.on_failure = OnFailure::kWarn;
        } else {
          error(f->value.Mark(), path + ".on_failure",
                "expected fail, continue or warn, got " + quoteText(*v));
        }
      }
    }
    if (auto* r = optional(e, "run_on")) {
      if (auto v = text(r->value, path + ".run_on")) {
        if (*v == "each") {
          s.run_on = RunOn::kEach;
        } else if (*v == "leader") {
          s.run_on = RunOn::kLeader;
          if (scope_ != Scope::kPod) {
            error(r->value.Mark(), path + ".run_on", "run_on: leader needs scope: pod");
          }
        } else {
          error(r->value.Mark(), path + ".run_on", "expected each or leader, got " + quoteText(*v));
        }
      }
    }
    if (auto* w = optional(e, "when")) {
      if (auto v = text(w->value, path + ".when")) {
        templates(*v, w->value, path + ".when", true);
        s.when = *v;
      }
    }
    if (s.type == StepType::kRun) {
      if (auto* r = optional(e, "retest")) s.retest = retest(r->value, path + ".retest", index);
    }
    if (auto* t = optional(e, "target")) {
      if (auto v = text(t->value, path + ".target")) {
        if (*v == "host") {
          s.target = Target::kHost;
        } else if (*v == "bmc") {
          s.target = Target::kBmc;
          if (s.type != StepType::kRun)
            error(t->value.Mark(), path + ".target", "target: bmc is for run steps (a tool like kiln-oob on the out-of-band runner)");
          else if (s.run_on == RunOn::kLeader)
            error(t->value.Mark(), path + ".target", "target: bmc runs once per host's BMC: it cannot be run_on: leader");
        } else if (*v == "switch_trays") {
          s.target = Target::kSwitchTrays;
          if (s.type != StepType::kRun)
            error(t->value.Mark(), path + ".target",
                  "target: switch_trays is for run steps (a tool like kiln-oob on the out-of-band runner)");
          else if (s.run_on != RunOn::kLeader)
            error(
                t->value.Mark(), path + ".target",
                "target: switch_trays runs once per pod, about all its switch trays: add run_on: leader (scope: pod)");
        } else {
          error(t->value.Mark(), path + ".target", "expected host, bmc or switch_trays, got " + quoteText(*v));
        }
      }
    }
    if (auto* o = optional(e, "stdout_when_parsed")) {
      if (s.parse.empty())
        error(o->key.Mark(), path + ".stdout_when_parsed",
              "stdout_when_parsed is for run steps with a parse format (the parsed document is what is kept)");
      else if (auto v = integer(o->value, path + ".stdout_when_parsed", 0, kMaxStdoutWhenParsed))
        s.stdout_when_parsed = *v;
    }
    if (auto* i = optional(e, "inventory")) {
      if (s.target == Target::kHost || s.type != StepType::kRun)
        error(i->key.Mark(), path + ".inventory",
              "inventory is for run steps with target: bmc or switch_trays (a read-back from the device itself)");
      else if (s.parse != "json")
        error(i->key.Mark(), path + ".inventory", "inventory needs parse: json (kiln-oob firmware list's answer)");
      else
        s.inventory = inventory(i->value, path + ".inventory", s.target);
    }
    if (auto* a = optional(e, "agree")) {
      if (s.type != StepType::kBarrier)
        error(a->key.Mark(), path + ".agree", "agree is for barrier steps (the pod's hosts compared when all arrive)");
      else
        s.agree = agree(a->value, path + ".agree", index);
    }
    if (auto* r = optional(e, "recover")) {
      if (s.type != StepType::kReboot)
        error(r->key.Mark(), path + ".recover", "recover is for reboot steps (a power cycle through the host's BMC)");
      else
        s.recover = recover(r->value, path + ".recover");
    }
    return s;
  }

  // A barrier's `agree: {step, paths}`: an earlier step with a parse, and check paths.
  std::optional<Agree> agree(const YAML::Node& n, const std::string& path, std::size_t index) {
    if (!n.IsMap()) {
      error(n.Mark(), path, "expected {step, paths}, got " + describeNode(n));
      return std::nullopt;
    }
    Agree a;
    Entries e = entries(n, path, {"step", "paths"});
    if (auto* st = required(e, "step", n, path)) {
      if (auto v = text(st->value, path + ".step", "a step id")) {
        a.step = *v;
        auto it = step_index_.find(*v);
        if (it == step_index_.end())
          error(st->value.Mark(), path + ".step", "no step " + quoteText(*v) + " in this workflow");
        else if (it->second.position >= index)
          error(st->value.Mark(), path + ".step", "step " + quoteText(*v) + " does not come before this barrier");
        else if (!it->second.has_parse)
          error(st->value.Mark(), path + ".step", "step " + quoteText(*v) + " has no parse, so there is nothing to compare");
      }
    }
    if (auto* p = required(e, "paths", n, path)) {
      if (!p->value.IsSequence() || p->value.size() == 0) {
        error(p->value.Mark(), path + ".paths", "expected a non-empty list of paths like [gpus[*].fabric.clique_id], got " +
                                                    describeNode(p->value));
      } else {
        for (std::size_t i = 0; i < p->value.size(); ++i) {
          std::string one;
          checkPath(p->value[i], path + ".paths[" + std::to_string(i) + "]", one);
          if (!one.empty()) a.paths.push_back(one);
        }
      }
    }
    return a;
  }

  // A read-back's `inventory: {KIND: FIRMWARE_ID}`: Kiln's component kinds, each to the id of the
  // device's FirmwareInventory member that holds it.
  std::map<std::string, std::string> inventory(const YAML::Node& n, const std::string& path, Target target) {
    std::map<std::string, std::string> out;
    if (!n.IsMap() || n.size() == 0) {
      error(n.Mark(), path,
            "expected a mapping of component kind to firmware id like {bmc: BMC_Firmware}, got " + describeNode(n));
      return out;
    }
    const bool switches = target == Target::kSwitchTrays;
    for (const auto& kv : n) {
      auto kind = text(kv.first, path, "a component kind");
      if (!kind) continue;
      const std::string p = path + "." + *kind;
      const bool known = std::find(kHostKinds.begin(), kHostKinds.end(), *kind) != kHostKinds.end();
      if (switches && *kind != "nvswitch")
        error(kv.first.Mark(), p, "a switch tray's read-back holds nvswitch only, got " + quoteText(*kind));
      else if (!switches && !known)
        error(kv.first.Mark(), p,
              "expected one of " + listOf(kHostKinds) + " (a compute tray's own components), got " + quoteText(*kind));
      auto id = text(kv.second, p, "a FirmwareInventory member id");
      if (!id) continue;
      if (!std::regex_match(*id, kFirmwareIdRe))
        error(kv.second.Mark(), p,
              "expected a FirmwareInventory member id (1 to 64 of A-Z a-z 0-9 . _ -), got " + quoteText(*id));
      else
        out[*kind] = *id;
    }
    return out;
  }

  // A reboot step's `recover: {power_cycles, timeout}`.
  std::optional<Recover> recover(const YAML::Node& n, const std::string& path) {
    if (!n.IsMap()) {
      error(n.Mark(), path, "expected {power_cycles, timeout}, got " + describeNode(n));
      return std::nullopt;
    }
    Recover r;
    Entries e = entries(n, path, {"power_cycles", "timeout"});
    if (auto* c = optional(e, "power_cycles")) {
      if (auto v = integer(c->value, path + ".power_cycles", 1, 5)) r.power_cycles = static_cast<int>(*v);
    }
    if (auto* t = optional(e, "timeout")) {
      auto v = durationValue(t->value, path + ".timeout");
      if (v && !v->param.empty())
        error(t->value.Mark(), path + ".timeout", "expected a literal duration like 5m (not a parameter)");
      else if (v && (v->literal.value < std::chrono::seconds(10) || v->literal.value > std::chrono::hours(1)))
        error(t->value.Mark(), path + ".timeout", "expected a duration from 10s to 1h");
      else if (v)
        r.timeout = v->literal;
    }
    return r;
  }

  // A stage step's `artifacts`: names of declared params of type artifact, each once.
  std::vector<std::string> stageArtifacts(const YAML::Node& n, const std::string& path) {
    std::vector<std::string> out;
    if (!n.IsSequence() || n.size() == 0) {
      error(n.Mark(), path, "expected a non-empty list of artifact parameter names like [tray_package, nic_image], got " +
                                describeNode(n));
      return out;
    }
    for (std::size_t i = 0; i < n.size(); ++i) {
      const std::string p = path + "[" + std::to_string(i) + "]";
      auto v = text(n[i], p, "a parameter name");
      if (!v) continue;
      const ParamSpec* param = findParam(*v);
      if (param == nullptr) {
        error(n[i].Mark(), p, "unknown parameter " + quoteText(*v) + declaredParams());
      } else if (param->type != ParamType::kArtifact) {
        error(n[i].Mark(), p, "parameter " + quoteText(*v) + " has type " + paramTypeName(param->type) +
                                  ": a stage step fetches parameters of type artifact");
      } else if (std::find(out.begin(), out.end(), *v) != out.end()) {
        error(n[i].Mark(), p, "parameter " + quoteText(*v) + " is listed twice");
      } else {
        out.push_back(*v);
      }
    }
    return out;
  }

  std::vector<std::string> argv(const YAML::Node& n, const std::string& path) {
    std::vector<std::string> out;
    if (!n.IsSequence() || n.size() == 0) {
      error(n.Mark(), path,
            "expected a non-empty argv list like [nvidia-smi, -q, -x] (no shell strings), got " +
                describeNode(n));
      return out;
    }
    for (std::size_t i = 0; i < n.size(); ++i) {
      std::string p = path + "[" + std::to_string(i) + "]";
      if (auto v = text(n[i], p, "a string argument")) {
        templates(*v, n[i], p, true);
        out.push_back(*v);
      }
    }
    if (!out.empty() && out[0].empty()) error(n[0].Mark(), path + "[0]", "empty program name");
    return out;
  }

  Retries retries(const YAML::Node& n, const std::string& path) {
    Retries r;
    if (!n.IsMap()) {
      error(n.Mark(), path, "expected {count, backoff}, got " + describeNode(n));
      return r;
    }
    Entries e = entries(n, path, {"count", "backoff"});
    if (auto* c = required(e, "count", n, path)) {
      if (auto v = integer(c->value, path + ".count", 0, 10)) r.count = static_cast<int>(*v);
    }
    if (auto* b = optional(e, "backoff")) {
      if (auto s = text(b->value, path + ".backoff", "a duration like 30s or 15m")) {
        if (auto d = parseDuration(*s)) {
          r.backoff = *d;
        } else {
          error(b->value.Mark(), path + ".backoff",
                "expected a duration like 30s or 15m, got " + quoteText(*s));
        }
      }
    }
    return r;
  }

  std::vector<int> exitCodes(const YAML::Node& n, const std::string& path) {
    std::vector<int> out;
    if (!n.IsSequence() || n.size() == 0) {
      error(n.Mark(), path, "expected a non-empty list of exit codes like [0, 1], got " +
                                describeNode(n));
      return {0};
    }
    for (std::size_t i = 0; i < n.size(); ++i) {
      if (auto v = integer(n[i], path + "[" + std::to_string(i) + "]", 0, 255)) {
        out.push_back(static_cast<int>(*v));
      }
    }
    return out;
  }

  std::optional<Retest> retest(const YAML::Node& n, const std::string& path, std::size_t index) {
    if (!n.IsMap()) {
      error(n.Mark(), path, "expected {from, times}, got " + describeNode(n));
      return std::nullopt;
    }
    Retest r;
    Entries e = entries(n, path, {"from", "times"});
    if (auto* f = required(e, "from", n, path)) {
      if (auto v = text(f->value, path + ".from")) {
        auto it = step_index_.find(*v);
        if (it == step_index_.end()) {
          error(f->value.Mark(), path + ".from", "no step " + quoteText(*v) + " in this workflow");
        } else if (it->second.position > index) {
          error(f->value.Mark(), path + ".from",
                "step " + quoteText(*v) + " comes after this step; expected this or an earlier step");
        }
        r.from = *v;
      }
    }
    if (auto* t = optional(e, "times")) {
      if (auto v = integer(t->value, path + ".times", 1, 10)) r.times = static_cast<int>(*v);
    }
    return r;
  }

  std::vector<Check> checks(const YAML::Node& n, const std::string& path, std::size_t step_index) {
    std::vector<Check> out;
    if (!n.IsSequence()) {
      error(n.Mark(), path, "expected a list of checks, got " + describeNode(n));
      return out;
    }
    for (std::size_t i = 0; i < n.size(); ++i) {
      out.push_back(check(n[i], path + "[" + std::to_string(i) + "]", step_index));
    }
    return out;
  }

  void checkPath(const YAML::Node& n, const std::string& path, std::string& out) {
    auto s = text(n, path, "a path like gpus[*].fabric.state");
    if (!s) return;
    auto segs = parsePath(*s);
    if (!segs.ok()) {
      error(n.Mark(), path, "expected a path like gpus[*].fabric.state: " + segs.error().message);
      return;
    }
    out = *s;
  }

  // The operand of `op`, checked for its shape; templates must name declared params.
  json operand(CheckOp op, const YAML::Node& n, const std::string& path) {
    auto scalarOperand = [&]() -> json {
      if (n.IsNull()) return nullptr;  // `eq: null` (YAML cannot tell it from `eq:` alone)
      if (!n.IsScalar()) {
        error(n.Mark(), path, "expected a single value, got " + describeNode(n));
        return nullptr;
      }
      json v = scalarToJson(n);
      if (v.is_string()) templates(v.get<std::string>(), n, path, false);
      return v;
    };
    switch (op) {
      case CheckOp::kEq:
      case CheckOp::kNe: return scalarOperand();
      case CheckOp::kLt:
      case CheckOp::kLe:
      case CheckOp::kGt:
      case CheckOp::kGe:
      case CheckOp::kMaxIncrease: {
        json v = scalarOperand();
        bool ok = v.is_number() || (v.is_string() && !soleReference(v.get<std::string>()).empty());
        if (n.IsScalar() && !ok) {
          error(n.Mark(), path, "expected a number or {{param}}, got " + describeNode(n));
        }
        if (op == CheckOp::kMaxIncrease && v.is_number() && v.get<double>() < 0) {
          error(n.Mark(), path, "expected a number >= 0, got " + describeNode(n));
        }
        return v;
      }
      case CheckOp::kIn:
      case CheckOp::kNotIn: {
        if (!n.IsSequence() || n.size() == 0) {
          error(n.Mark(), path, "expected a non-empty list of values, got " + describeNode(n));
          return json::array();
        }
        json arr = json::array();
        for (std::size_t i = 0; i < n.size(); ++i) {
          std::string p = path + "[" + std::to_string(i) + "]";
          if (n[i].IsNull()) {
            arr.push_back(nullptr);
            continue;
          }
          if (!n[i].IsScalar()) {
            error(n[i].Mark(), p, "expected a single value, got " + describeNode(n[i]));
            continue;
          }
          json v = scalarToJson(n[i]);
          if (v.is_string()) templates(v.get<std::string>(), n[i], p, false);
          arr.push_back(std::move(v));
        }
        return arr;
      }
      case CheckOp::kMatches: {
        auto s = text(n, path, "a regular expression");
        if (!s) return nullptr;
        templates(*s, n, path, false);
        if (auto names = templateNames(*s); names.ok() && names->empty()) {
          try {
            std::regex re(*s, std::regex::ECMAScript);
          } catch (const std::regex_error& ex) {
            error(n.Mark(), path, "expected a regular expression, got " + quoteText(*s) + ": " +
                                      ex.what());
          }
        }
        return *s;
      }
      case CheckOp::kExists: {
        auto b = boolean(n, path);
        return b.value_or(true);
      }
    }
    return nullptr;
  }

  Check check(const YAML::Node& n, const std::string& path, std::size_t step_index) {
    Check c;
    static const std::vector<std::pair<std::string, CheckOp>> kOps = {
        {"eq", CheckOp::kEq}, {"ne", CheckOp::kNe}, {"lt", CheckOp::kLt},
        {"le", CheckOp::kLe}, {"gt", CheckOp::kGt}, {"ge", CheckOp::kGe},
        {"in", CheckOp::kIn}, {"not_in", CheckOp::kNotIn}, {"matches", CheckOp::kMatches},
        {"exists", CheckOp::kExists},
        {"max_increase", CheckOp::kMaxIncrease}};
    if (!n.IsMap()) {
      error(n.Mark(), path, "expected a check mapping with name, path and an operator, got " +
                                describeNode(n));
      return c;
    }
    c.mark = {n.Mark().line + 1, n.Mark().column + 1};
    std::vector<std::string> allowed = {"name", "description", "path", "when",
                                        "explain", "delta_from", "fields"};
    for (const auto& [k, op] : kOps) allowed.push_back(k);
    Entries e = entries(n, path, allowed);
    if (auto* p = required(e, "path", n, path)) checkPath(p->value, path + ".path", c.path);
    if (auto* x = optional(e, "explain")) checkPath(x->value, path + ".explain", c.explain);
    if (auto* d = optional(e, "description")) {
      if (auto v = text(d->value, path + ".description")) c.description = *v;
    }
    if (auto* w = optional(e, "when")) {
      if (auto v = text(w->value, path + ".when")) {
        templates(*v, w->value, path + ".when", false);
        c.when = *v;
      }
    }
    const bool delta = e.contains("delta_from");
    const Entry* op_entry = nullptr;
    for (const auto& [k, op] : kOps) {
      auto it = e.find(k);
      if (it == e.end()) continue;
      if (delta && op != CheckOp::kMaxIncrease) {
        error(it->second.key.Mark(), path + "." + k,
              "a delta_from check takes max_increase, not " + k);
        continue;
      }
      if (!delta && op == CheckOp::kMaxIncrease) {
        error(it->second.key.Mark(), path + "." + k, "max_increase needs delta_from: <step id>");
        continue;
      }
      if (op_entry != nullptr) {
        error(it->second.key.Mark(), path + "." + k,
              "one operator per check, this one already has " + std::string(checkOpName(c.op)));
        continue;
      }
      op_entry = &it->second;
      c.op = op;
      c.expected = operand(op, it->second.value, path + "." + k);
    }
    if (delta) {
      c.op = CheckOp::kMaxIncrease;
      if (op_entry == nullptr) c.expected = 0;  // production NVLink checks: any increase fails
      const Entry& d = e.at("delta_from");
      if (auto v = text(d.value, path + ".delta_from", "a step id")) {
        c.delta_from = *v;
        auto it = step_index_.find(*v);
        if (it == step_index_.end()) {
          error(d.value.Mark(), path + ".delta_from", "no step " + quoteText(*v) + " in this workflow");
        } else if (it->second.position >= step_index) {
          error(d.value.Mark(), path + ".delta_from",
                "step " + quoteText(*v) + " does not come before this step; expected an earlier "
                "step's id");
        } else if (!it->second.has_parse) {
          error(d.value.Mark(), path + ".delta_from",
                "step " + quoteText(*v) + " has no parse, so there is nothing to compare with");
        }
      }
      if (auto* f = optional(e, "fields")) {
        if (!f->value.IsSequence() || f->value.size() == 0) {
          error(f->value.Mark(), path + ".fields",
                "expected a non-empty list of counter names, got " + describeNode(f->value));
        } else {
          for (std::size_t i = 0; i < f->value.size(); ++i) {
            if (auto v = text(f->value[i], path + ".fields[" + std::to_string(i) + "]")) {
              c.fields.push_back(*v);
            }
          }
        }
      }
    } else {
      if (auto it = e.find("fields"); it != e.end()) {
        error(it->second.key.Mark(), path + ".fields", "fields needs delta_from: <step id>");
      }
      if (op_entry == nullptr && !e.contains("max_increase")) {
        error(n.Mark(), path,
              "expected one operator: eq, ne, lt, le, gt, ge, in, not_in, matches or exists (or "
              "delta_from with max_increase)");
      }
    }
    if (auto* nm = optional(e, "name")) {
      if (auto v = text(nm->value, path + ".name")) c.name = *v;
    }
    if (c.name.empty()) {
      c.name = c.path + " " + checkOpName(c.op) + " " + c.expected.dump();
    }
    return c;
  }

  std::string source_;
  std::vector<Problem> problems_;
  Scope scope_ = Scope::kHost;
  const std::vector<ParamSpec>* params_ = nullptr;
  std::map<std::string, StepIndex> step_index_;
};

std::string problemLine(const std::string& source, const Problem& p) {
  std::string line = source + ":" + std::to_string(p.line) + ":" + std::to_string(p.column) + ": ";
  if (!p.path.empty()) line += p.path + ": ";
  return line + p.message;
}

kiln::Error invalidFrom(const std::vector<std::pair<std::string, Problem>>& problems) {
  kiln::Error err = kiln::invalidContent(problemLine(problems[0].first, problems[0].second));
  std::string text;
  for (const auto& [source, p] : problems) {
    err.fields.push_back(
        {p.path, std::to_string(p.line) + ":" + std::to_string(p.column) + ": " + p.message});
    text += (text.empty() ? "" : "\n") + problemLine(source, p);
  }
  err.details["text"] = text;
  err.details["count"] = std::to_string(problems.size());
  return err;
}

std::vector<Problem> sortedByPosition(std::vector<Problem> v) {
  std::stable_sort(v.begin(), v.end(), [](const Problem& a, const Problem& b) {
    return std::tie(a.line, a.column) < std::tie(b.line, b.column);
  });
  return v;
}

// loadWorkflow's result, or its problems when invalid (for the directory loader).
std::variant<WorkflowSpec, std::vector<Problem>> loadOrProblems(std::string_view yaml_text,
                                                                std::string_view source_name) {
  if (auto bad = kiln::findInvalidUtf8(yaml_text)) {
    // Every string of a spec ends up in JSON (the API, check messages): it must be UTF-8.
    Problem p;
    p.line = static_cast<int>(bad->line);
    p.column = static_cast<int>(bad->column);
    p.message = kiln::describe(*bad);
    return std::vector<Problem>{p};
  }
  if (auto nesting = kiln::checkYamlNesting(yaml_text); !nesting.ok()) {
    Problem p;
    p.message = nesting.error().message;
    return std::vector<Problem>{p};
  }
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& ex) {
    Problem p;
    p.line = ex.mark.is_null() ? 0 : ex.mark.line + 1;
    p.column = ex.mark.is_null() ? 0 : ex.mark.column + 1;
    p.message = "YAML syntax error: " + ex.msg;
    return std::vector<Problem>{p};
  }
  Validator v{std::string(source_name)};
  WorkflowSpec spec = v.load(root);
  if (!v.problems().empty()) return sortedByPosition(v.problems());
  spec.source_name = std::string(source_name);
  spec.content_hash = contentHash(yaml_text);
  return spec;
}

}  // namespace

std::string contentHash(std::string_view yaml_text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  KILN_CHECK(EVP_Digest(yaml_text.data(), yaml_text.size(), digest, &len, EVP_sha256(),
                        nullptr) == 1);
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(len * 2);
  for (unsigned int i = 0; i < len; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 0xf];
  }
  return out;
}

kiln::Result<WorkflowSpec> loadWorkflow(std::string_view yaml_text, std::string_view source_name) {
  auto r = loadOrProblems(yaml_text, source_name);
  if (auto* spec = std::get_if<WorkflowSpec>(&r)) return std::move(*spec);
  std::vector<std::pair<std::string, Problem>> all;
  for (auto& p : std::get<std::vector<Problem>>(r)) all.emplace_back(std::string(source_name), p);
  return invalidFrom(all);
}

namespace {
kiln::Result<std::string> readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return kiln::notFound("cannot read workflow file " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

kiln::Result<WorkflowSpec> loadWorkflowFile(const std::string& path) {
  auto text = readFile(path);
  if (!text.ok()) return text.error();
  return loadWorkflow(*text, path);
}

kiln::Result<std::vector<WorkflowSpec>> loadWorkflowDir(const std::string& dir) {
  std::error_code ec;
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    auto ext = entry.path().extension();
    if (entry.is_regular_file() && (ext == ".yaml" || ext == ".yml")) {
      files.push_back(entry.path().filename().string());
    }
  }
  if (ec) return kiln::notFound("cannot read workflow directory " + dir + ": " + ec.message());
  std::sort(files.begin(), files.end());
  std::vector<WorkflowSpec> specs;
  std::vector<std::pair<std::string, Problem>> problems;
  std::map<std::string, std::string> names;  // workflow name -> file
  for (const auto& f : files) {
    std::string path = dir.ends_with('/') ? dir + f : dir + "/" + f;
    auto text = readFile(path);
    if (!text.ok()) {
      problems.emplace_back(path, Problem{0, 0, "", text.error().message});
      continue;
    }
    auto r = loadOrProblems(*text, path);
    if (auto* ps = std::get_if<std::vector<Problem>>(&r)) {
      for (auto& p : *ps) problems.emplace_back(path, p);
      continue;
    }
    auto& spec = std::get<WorkflowSpec>(r);
    if (auto [it, fresh] = names.emplace(spec.name, path); !fresh) {
      problems.emplace_back(path, Problem{1, 1, "name", "workflow " + quoteText(spec.name) +
                                                            " is also defined in " + it->second});
      continue;
    }
    specs.push_back(std::move(spec));
  }
  if (!problems.empty()) return invalidFrom(problems);
  return specs;
}

}  // namespace kiln::workflow
