#include "orchestrator/workflow/checks.h"

#include <algorithm>
#include <set>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <regex>

#include "orchestrator/workflow/substitute.h"

namespace kiln::workflow {
namespace {

using nlohmann::json;

// Failure lists are capped so one broken pod does not produce a megabyte of message.
constexpr std::size_t kMaxListedFailures = 12;

const char* const kLabelKeys[] = {"name", "id", "index", "gpu", "gpu_id", "link", "link_id"};

bool isKeyChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
}

std::string scalarText(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

std::optional<double> toNumber(const json& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (s.empty()) return std::nullopt;
    char* end = nullptr;
    double d = std::strtod(s.c_str(), &end);
    if (end == s.c_str() + s.size() && std::isfinite(d)) return d;
  }
  return std::nullopt;
}

std::string numberText(double d) {
  if (std::floor(d) == d && std::fabs(d) < 1e15) {
    return std::to_string(static_cast<long long>(d));
  }
  return json(d).dump();
}

// Equality that forgives the text/number/bool mismatches parsers and parameters produce:
// 5 == "5", true == "true".
bool looseEqual(const json& a, const json& b) {
  if (a.is_number() && b.is_number()) return a.get<double>() == b.get<double>();
  if (a.is_number() != b.is_number() && (a.is_string() || b.is_string())) {
    auto x = toNumber(a), y = toNumber(b);
    return x && y && *x == *y;
  }
  if (a.is_boolean() && b.is_string()) return scalarText(a) == b.get<std::string>();
  if (b.is_boolean() && a.is_string()) return scalarText(b) == a.get<std::string>();
  return a == b;
}

// in (want_in) / not_in: a scalar is (not) one of `list`; a list value has every element in
// `list` (in) or none of them (not_in).
bool inList(const json& v, const json& list, bool want_in) {
  auto member = [&](const json& x) {
    return std::any_of(list.begin(), list.end(), [&](const json& w) { return looseEqual(x, w); });
  };
  if (!v.is_array()) return member(v) == want_in;
  return std::all_of(v.begin(), v.end(), [&](const json& x) { return member(x) == want_in; });
}

// A null value is what the parsers make of a field the tool printed as N/A (or not at all, at
// that driver): the check cannot know the real value. It satisfies a check only where the check
// names null itself: `eq: null`, `in: [..., null]`. Every other operator fails on it, `ne` and
// `not_in` included (null is not known to differ), `matches` too (no text to match).
bool nullSatisfies(CheckOp op, const json& want) {
  if (op == CheckOp::kEq) return want.is_null();
  if (op == CheckOp::kIn && want.is_array()) {
    return std::any_of(want.begin(), want.end(), [](const json& w) { return w.is_null(); });
  }
  return false;
}

// One value a path selected, or the place where selection stopped.
struct Hit {
  const json* value = nullptr;  // null: missing
  std::string missing;          // why, when value is null
  std::string where;            // "gpu 2 link 7"
  std::string canon;            // "gpus[2].links[7]" with labels: matches baselines
  std::string tail;             // keys after the last array selection: "remapped_rows.pending"
};

std::string singular(const std::string& key) {
  if (key.empty()) return "item";
  if (key.size() > 1 && key.back() == 's') return key.substr(0, key.size() - 1);
  return key;
}

std::string labelOf(const json& element, std::size_t position) {
  if (element.is_object()) {
    for (const char* k : kLabelKeys) {
      auto it = element.find(k);
      if (it != element.end() && (it->is_string() || it->is_number())) return scalarText(*it);
    }
  }
  return std::to_string(position);
}

std::string joinTail(const std::string& tail, const std::string& key) {
  return tail.empty() ? key : tail + "." + key;
}

void resolve(const json& node, const std::vector<PathSegment>& segs, std::size_t i,
             const std::string& array_key, Hit hit, std::vector<Hit>& out) {
  if (i == segs.size()) {
    hit.value = &node;
    out.push_back(std::move(hit));
    return;
  }
  const PathSegment& seg = segs[i];
  auto missing = [&](std::string why) {
    hit.missing = std::move(why);
    out.push_back(std::move(hit));
  };
  auto descend = [&](const json& element, std::size_t position) {
    Hit next = hit;
    std::string label = labelOf(element, position);
    std::string word = singular(array_key);
    next.where = next.where.empty() ? word + " " + label : next.where + " " + word + " " + label;
    next.canon += "[" + label + "]";
    next.tail.clear();
    resolve(element, segs, i + 1, array_key, std::move(next), out);
  };
  const std::string here = hit.tail.empty() ? (array_key.empty() ? "value" : array_key) : hit.tail;
  switch (seg.kind) {
    case PathSegment::Kind::kKey: {
      std::string tail = joinTail(hit.tail, seg.key);
      if (!node.is_object() || !node.contains(seg.key)) return missing(tail + " missing");
      hit.tail = tail;
      hit.canon += "." + seg.key;
      resolve(node.at(seg.key), segs, i + 1, seg.key, std::move(hit), out);
      return;
    }
    case PathSegment::Kind::kIndex:
      if (!node.is_array()) return missing(here + " is not a list");
      if (seg.index >= node.size()) {
        return missing(here + "[" + std::to_string(seg.index) + "] missing (" +
                       std::to_string(node.size()) + " elements)");
      }
      descend(node[seg.index], seg.index);
      return;
    case PathSegment::Kind::kAll:
      if (!node.is_array()) return missing(here + " is not a list");
      if (node.empty()) return missing(here + " is empty");
      for (std::size_t k = 0; k < node.size(); ++k) descend(node[k], k);
      return;
    case PathSegment::Kind::kFilter:
      if (!node.is_array()) return missing(here + " is not a list");
      for (std::size_t k = 0; k < node.size(); ++k) {
        const json& e = node[k];
        if (e.is_object() && e.contains(seg.key) && scalarText(e.at(seg.key)) == seg.filter_value) {
          descend(e, k);
        }
      }
      return;
  }
}

std::vector<Hit> select(const json& root, const std::vector<PathSegment>& segs) {
  std::vector<Hit> out;
  resolve(root, segs, 0, "", Hit{}, out);
  return out;
}

std::string describe(const Hit& h) {
  std::string prefix = h.where.empty() ? "" : h.where + ": ";
  if (h.value == nullptr) return prefix + h.missing;
  std::string text = prefix + (h.tail.empty() ? "value" : h.tail) + " = " + h.value->dump();
  if (h.value->is_null()) text += " (not reported)";
  return text;
}

// The operand with `{{param}}` references replaced. A string that is exactly one reference
// becomes a number or bool when the value reads as one.
kiln::Result<json> resolveOperand(const json& operand, const ParamValues& params) {
  if (operand.is_array()) {
    json out = json::array();
    for (const auto& e : operand) {
      auto r = resolveOperand(e, params);
      if (!r.ok()) return r.error();
      out.push_back(std::move(r.value()));
    }
    return out;
  }
  if (!operand.is_string()) return operand;
  const std::string& text = operand.get_ref<const std::string&>();
  auto s = substitute(text, params, {});
  if (!s.ok()) return s.error();
  if (!soleReference(text).empty()) {
    if (*s == "true") return json(true);
    if (*s == "false") return json(false);
    if (auto n = parseInt(*s)) return json(*n);
  }
  return json(std::move(s.value()));
}

void joinFailures(std::string& msg, const std::vector<std::string>& failures) {
  for (std::size_t k = 0; k < failures.size() && k < kMaxListedFailures; ++k) {
    msg += (k == 0 ? "" : "; ") + failures[k];
  }
  if (failures.size() > kMaxListedFailures) {
    msg += "; and " + std::to_string(failures.size() - kMaxListedFailures) + " more";
  }
}

void addFailedAt(CheckOutcome& out, const std::string& where) {
  if (!where.empty() &&
      std::find(out.failed_at.begin(), out.failed_at.end(), where) == out.failed_at.end()) {
    out.failed_at.push_back(where);
  }
}

std::string explainText(const Check& check, const json& parsed) {
  if (check.explain.empty()) return "";
  auto segs = parsePath(check.explain);
  if (!segs.ok()) return "";
  std::vector<std::string> values;
  for (const auto& h : select(parsed, *segs)) {
    if (h.value == nullptr) continue;
    std::string v = scalarText(*h.value);
    if (std::find(values.begin(), values.end(), v) == values.end()) values.push_back(std::move(v));
  }
  std::string text = " (" + check.explain + ": ";
  if (values.empty()) return text + "none)";
  for (std::size_t k = 0; k < values.size(); ++k) text += (k == 0 ? "" : ", ") + values[k];
  return text + ")";
}

void evaluateDelta(const Check& check, const std::vector<PathSegment>& segs, const json& parsed,
                   const std::map<std::string, json>& earlier, double max_increase,
                   CheckOutcome& out) {
  auto base_it = earlier.find(check.delta_from);
  if (base_it == earlier.end()) {
    out.message = "no parsed output of baseline step " + check.delta_from;
    return;
  }
  std::map<std::string, const Hit*> baseline;
  std::vector<Hit> base_hits = select(base_it->second, segs);
  for (const auto& h : base_hits) {
    if (h.value != nullptr) baseline[h.canon] = &h;
  }
  std::vector<std::string> failures;
  std::size_t compared = 0;
  auto compare = [&](const Hit& h, const std::string& field, const json* now, const json* before) {
    std::string prefix = h.where.empty() ? "" : h.where + ": ";
    if (now == nullptr) {
      failures.push_back(prefix + field + " missing");
    } else if (before == nullptr) {
      failures.push_back(prefix + field + " not in baseline " + check.delta_from);
    } else if (now->is_null() && before->is_null()) {
      return;  // a counter the tool cannot read on this link (parsers give null): not growth
    } else {
      auto n = toNumber(*now), b = toNumber(*before);
      if (!n || !b) {
        failures.push_back(prefix + field + " is not a number (" + now->dump() + ", baseline " +
                           before->dump() + ")");
      } else {
        ++compared;
        if (*n - *b <= max_increase) return;
        failures.push_back(prefix + field + " +" + numberText(*n - *b));
      }
    }
    addFailedAt(out, h.where);
  };
  for (const auto& h : select(parsed, segs)) {
    if (h.value == nullptr) {
      failures.push_back(describe(h));
      addFailedAt(out, h.where);
      continue;
    }
    auto b = baseline.find(h.canon);
    const json* before = b == baseline.end() ? nullptr : b->second->value;
    if (check.fields.empty()) {
      compare(h, h.tail.empty() ? "value" : h.tail, h.value, before);
      continue;
    }
    for (const auto& f : check.fields) {
      const json* now = h.value->is_object() && h.value->contains(f) ? &h.value->at(f) : nullptr;
      const json* was =
          before != nullptr && before->is_object() && before->contains(f) ? &before->at(f) : nullptr;
      compare(h, f, now, was);
    }
  }
  std::string limit = numberText(max_increase);
  if (failures.empty() && compared == 0) {
    out.message = "expected counters at " + check.path + ", found none";
    return;
  }
  if (failures.empty()) {
    out.passed = true;
    out.message = std::to_string(compared) + " counters rose by at most " + limit + " since " +
                  check.delta_from;
    return;
  }
  out.message = "counters at " + check.path + " rose by more than " + limit + " since " +
                check.delta_from + ": ";
  joinFailures(out.message, failures);
}

}  // namespace

kiln::Result<std::vector<PathSegment>> parsePath(std::string_view path) {
  std::vector<PathSegment> segs;
  auto bad = [&](std::size_t at, const std::string& what) {
    return kiln::invalidContent("bad path \"" + std::string(path) + "\" at character " +
                                std::to_string(at + 1) + ": " + what);
  };
  if (path.empty()) return kiln::invalidContent("empty path");
  std::size_t i = 0;
  bool need_key = true;  // at the start or after '.'
  while (i < path.size()) {
    char c = path[i];
    if (c == '[') {
      std::size_t close = path.find(']', i);
      if (c == '[' && i + 1 < path.size() && path[i + 1] == '"') {
        std::size_t q = path.find('"', i + 2);
        if (q == std::string_view::npos || q + 1 >= path.size() || path[q + 1] != ']') {
          return bad(i, "expected [\"key\"]");
        }
        segs.push_back({PathSegment::Kind::kKey, std::string(path.substr(i + 2, q - i - 2)), 0, ""});
        i = q + 2;
      } else {
        if (close == std::string_view::npos) return bad(i, "unclosed '['");
        std::string_view inner = path.substr(i + 1, close - i - 1);
        if (inner == "*") {
          segs.push_back({PathSegment::Kind::kAll, "", 0, ""});
        } else if (auto n = parseInt(inner); n && *n >= 0) {
          segs.push_back({PathSegment::Kind::kIndex, "", static_cast<std::size_t>(*n), ""});
        } else if (std::size_t eq = inner.find('='); eq != std::string_view::npos && eq > 0) {
          std::string_view key = inner.substr(0, eq);
          if (!std::all_of(key.begin(), key.end(), isKeyChar)) return bad(i, "bad filter key");
          segs.push_back({PathSegment::Kind::kFilter, std::string(key), 0,
                          std::string(inner.substr(eq + 1))});
        } else {
          return bad(i, "expected [*], [N], [key=value] or [\"key\"]");
        }
        i = close + 1;
      }
      need_key = false;
      if (i < path.size() && path[i] != '.' && path[i] != '[') return bad(i, "expected '.' or '['");
      if (i < path.size() && path[i] == '.') {
        ++i;
        need_key = true;
        if (i == path.size()) return bad(i - 1, "path ends with '.'");
      }
      continue;
    }
    if (!need_key) return bad(i, "expected '.' or '['");
    std::size_t end = i;
    while (end < path.size() && isKeyChar(path[end])) ++end;
    if (end == i) return bad(i, "expected a key");
    segs.push_back({PathSegment::Kind::kKey, std::string(path.substr(i, end - i)), 0, ""});
    i = end;
    need_key = false;
    if (i < path.size()) {
      if (path[i] == '.') {
        ++i;
        need_key = true;
        if (i == path.size()) return bad(i - 1, "path ends with '.'");
      } else if (path[i] != '[') {
        return bad(i, "unexpected character");
      }
    }
  }
  return segs;
}

CheckOutcome evaluateCheck(const Check& check, const json& parsed,
                           const std::map<std::string, json>& earlier, const ParamValues& params) {
  CheckOutcome out;
  out.name = check.name;
  auto when = evaluateWhen(check.when, params, {});
  if (!when.ok()) {
    out.message = "when: " + when.error().message;
    return out;
  }
  if (!*when) {
    out.passed = true;
    out.skipped = true;
    out.message = "skipped: when \"" + check.when + "\" is empty or false";
    return out;
  }
  auto segs = parsePath(check.path);
  if (!segs.ok()) {
    out.message = segs.error().message;
    return out;
  }
  auto operand = resolveOperand(check.expected, params);
  if (!operand.ok()) {
    out.message = operand.error().message;
    return out;
  }
  const json& want = *operand;
  const std::string op = checkOpName(check.op);

  if (check.op == CheckOp::kMaxIncrease) {
    auto limit = toNumber(want);
    if (!limit) {
      out.message = "max_increase: expected a number, got " + want.dump();
      return out;
    }
    evaluateDelta(check, *segs, parsed, earlier, *limit, out);
    return out;
  }

  std::vector<Hit> hits = select(parsed, *segs);
  std::vector<std::string> failures;
  std::size_t ok_count = 0;
  std::optional<std::regex> re;
  if (check.op == CheckOp::kMatches) {
    try {
      re.emplace(scalarText(want), std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      out.message = "matches: bad regular expression " + want.dump() + ": " + e.what();
      return out;
    }
  }
  if (check.op == CheckOp::kExists) {
    bool want_exists = want.is_boolean() ? want.get<bool>() : looseEqual(want, json(true));
    for (const auto& h : hits) {
      if ((h.value != nullptr) == want_exists) {
        ++ok_count;
      } else {
        failures.push_back(want_exists ? describe(h) : describe(h) + " exists");
        addFailedAt(out, h.where);
      }
    }
    if (want_exists && hits.empty()) failures.push_back("nothing selected");
  } else {
    if (hits.empty()) failures.push_back("nothing selected");
    for (const auto& h : hits) {
      bool good = false;
      if (h.value != nullptr && h.value->is_null()) {
        good = nullSatisfies(check.op, want);
      } else if (h.value != nullptr) {
        const json& v = *h.value;
        switch (check.op) {
          case CheckOp::kEq: good = looseEqual(v, want); break;
          case CheckOp::kNe: good = !looseEqual(v, want); break;
          case CheckOp::kIn: good = inList(v, want, true); break;
          case CheckOp::kNotIn: good = inList(v, want, false); break;
          case CheckOp::kMatches: good = std::regex_search(scalarText(v), *re); break;
          case CheckOp::kLt:
          case CheckOp::kLe:
          case CheckOp::kGt:
          case CheckOp::kGe: {
            auto a = toNumber(v), b = toNumber(want);
            if (!a || !b) break;
            good = check.op == CheckOp::kLt   ? *a < *b
                   : check.op == CheckOp::kLe ? *a <= *b
                   : check.op == CheckOp::kGt ? *a > *b
                                              : *a >= *b;
            break;
          }
          case CheckOp::kExists:
          case CheckOp::kMaxIncrease: break;  // handled above
        }
      }
      if (good) {
        ++ok_count;
      } else {
        failures.push_back(describe(h));
        addFailedAt(out, h.where);
      }
    }
  }

  if (failures.empty()) {
    out.passed = true;
    out.message = check.path + " " + op + " " + want.dump() + ": ok (" +
                  std::to_string(ok_count) + (ok_count == 1 ? " value)" : " values)");
    return out;
  }
  out.message = "expected " + check.path + " " + op + " " + want.dump() + ", found: ";
  joinFailures(out.message, failures);
  out.message += explainText(check, parsed);
  return out;
}

std::vector<CheckOutcome> evaluateChecks(const StepSpec& step, const json& parsed,
                                         const std::map<std::string, json>& earlier,
                                         const ParamValues& params) {
  std::vector<CheckOutcome> out;
  out.reserve(step.checks.size());
  for (const auto& c : step.checks) out.push_back(evaluateCheck(c, parsed, earlier, params));
  return out;
}

std::vector<std::string> distinctValues(const nlohmann::json& parsed, std::string_view path) {
  auto segs = parsePath(path);
  if (!segs.ok()) return {};
  std::set<std::string> seen;
  std::vector<std::string> out;
  for (const auto& hit : select(parsed, *segs)) {
    std::string text = hit.value == nullptr ? "(missing)" : hit.value->is_null() ? "(not reported)" : scalarText(*hit.value);
    if (seen.insert(text).second) out.push_back(std::move(text));
  }
  return out;
}

bool allPassed(const std::vector<CheckOutcome>& outcomes) {
  return std::all_of(outcomes.begin(), outcomes.end(),
                     [](const CheckOutcome& o) { return o.passed; });
}

}  // namespace kiln::workflow
