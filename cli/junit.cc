#include "cli/junit.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/table.h"
#include "cli/time_text.h"

namespace kiln::cli {
namespace {

using nlohmann::json;

constexpr const char* kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// The length of the valid UTF-8 sequence at text[i] and its code point, or 0 when invalid.
std::size_t utf8Sequence(std::string_view text, std::size_t i, std::uint32_t& cp) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  std::size_t len = 0;
  std::uint32_t min = 0;
  if (lead >= 0xC2 && lead <= 0xDF) len = 2, cp = lead & 0x1F, min = 0x80;
  else if (lead >= 0xE0 && lead <= 0xEF) len = 3, cp = lead & 0x0F, min = 0x800;
  else if (lead >= 0xF0 && lead <= 0xF4) len = 4, cp = lead & 0x07, min = 0x10000;
  else return 0;
  if (i + len > text.size()) return 0;
  for (std::size_t k = 1; k < len; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

std::string seconds(std::int64_t ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", static_cast<double>(std::max<std::int64_t>(ms, 0)) / 1000.0);
  return buf;
}

std::int64_t intField(const json& object, const char* key) {
  if (!object.is_object()) return 0;
  auto it = object.find(key);
  return it != object.end() && it->is_number() ? it->get<std::int64_t>() : 0;
}

std::string text(const json& object, const char* key) { return field(object, key); }

// object[key] when it is a boolean, else `fallback`.
bool flag(const json& object, const char* key, bool fallback) {
  if (!object.is_object()) return fallback;
  auto it = object.find(key);
  return it != object.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

struct TestCase {
  std::string classname, name;
  std::int64_t duration_ms = 0;
  std::string kind;  // "" (passed), "failure", "error", "skipped"
  std::string message, body, out, err;
};

struct Counts {
  int tests = 0, failures = 0, errors = 0, skipped = 0;
};

void appendLine(std::string& to, const std::string& line) {
  if (line.empty()) return;
  if (!to.empty() && to.back() != '\n') to += "\n";
  to += line;
  if (line.back() != '\n') to += "\n";
}

// "attempt 2, retest round 1: failed (exit 1, 4.2s): message"
std::string attemptLine(const json& rec) {
  std::string line = "attempt " + text(rec, "attempt");
  if (intField(rec, "retest_round") > 0) line += ", retest round " + text(rec, "retest_round");
  line += ": " + text(rec, "outcome");
  std::string facts;
  if (rec.contains("exit_code") && intField(rec, "exit_code") >= 0 && text(rec, "outcome") != "skipped")
    facts = "exit " + text(rec, "exit_code");
  if (intField(rec, "duration_ms") > 0)
    facts += (facts.empty() ? "" : ", ") + formatDuration(std::chrono::milliseconds(intField(rec, "duration_ms")));
  if (!facts.empty()) line += " (" + facts + ")";
  if (!text(rec, "message").empty()) line += ": " + text(rec, "message");
  return line;
}

TestCase stepCase(const std::string& host, const std::string& name, const std::vector<const json*>& recs,
                  bool host_finished, bool is_current) {
  TestCase c{host, name};
  if (recs.empty()) {
    c.kind = "skipped";
    c.message = host_finished ? "not run" : is_current ? "running when the report was written" : "not reached yet";
    return c;
  }
  const json& last = *recs.back();
  for (const json* r : recs) c.duration_ms += intField(*r, "duration_ms");
  const std::string outcome = text(last, "outcome");
  if (recs.size() > 1)
    for (const json* r : recs) appendLine(c.out, attemptLine(*r));
  if (outcome == "failed") {
    c.kind = "failure";
    c.message = text(last, "message").empty() ? std::string("failed") : text(last, "message");
    if (last.contains("checks") && last["checks"].is_array())
      for (const auto& check : last["checks"])
        if (!flag(check, "passed", true) && !flag(check, "skipped", false))
          appendLine(c.body, "check failed: " + text(check, "name") + ": " + text(check, "message"));
    if (intField(last, "exit_code") >= 0 && last.contains("exit_code")) appendLine(c.body, "exit code: " + text(last, "exit_code"));
    appendLine(c.body, "message: " + c.message);
  } else if (outcome == "skipped") {
    c.kind = "skipped";
    c.message = text(last, "message").empty() ? std::string("skipped") : text(last, "message");
  } else if (outcome == "warned") {
    appendLine(c.out, "warning: " + text(last, "message"));
  } else if (!text(last, "message").empty() && recs.size() == 1) {
    appendLine(c.out, text(last, "message"));  // "run by <leader>: passed", "every host arrived"
  }
  const std::string tail = text(last, "stdout_tail");
  if (!tail.empty()) c.out += (c.out.empty() ? "" : "\n--- output tail ---\n") + tail;
  c.err = text(last, "stderr_tail");
  return c;
}

TestCase verdictCase(const json& host, std::int64_t duration_ms, const std::string& note) {
  const std::string name = text(host, "host");
  TestCase c{name, kVerdictTestName, duration_ms};
  const std::string status = text(host, "status");
  std::vector<std::string> failures, warnings;
  for (const auto& f : host.value("failures", json::array())) failures.push_back(cellText(f));
  for (const auto& w : host.value("warnings", json::array())) warnings.push_back(cellText(w));
  if (status == "failed") {
    c.kind = "failure";
    c.message = failures.empty() ? std::string("failed") : failures.front();
    if (failures.size() > 1) c.message += " (and " + std::to_string(failures.size() - 1) + " more)";
    for (const auto& f : failures) appendLine(c.body, f);
  } else if (status == "cancelled") {
    c.kind = "error";
    c.message = "cancelled";
  } else if (status != "passed") {
    c.kind = "error";
    c.message = "not finished (" + (status.empty() ? std::string("unknown") : status) +
                (text(host, "current_step").empty() ? "" : ", at step " + text(host, "current_step")) + ")";
    if (!note.empty()) c.message += ": " + note;
    for (const auto& f : failures) appendLine(c.body, f);
  }
  for (const auto& w : warnings) appendLine(c.out, "warning: " + w);
  return c;
}

void writeCase(std::string& out, const TestCase& c, Counts& counts) {
  ++counts.tests;
  out += "    <testcase classname=\"" + xmlEscape(c.classname, true) + "\" name=\"" + xmlEscape(c.name, true) +
         "\" time=\"" + seconds(c.duration_ms) + "\"";
  const bool has_children = !c.kind.empty() || !c.out.empty() || !c.err.empty();
  if (!has_children) {
    out += "/>\n";
    return;
  }
  out += ">\n";
  if (c.kind == "skipped") {
    ++counts.skipped;
    out += "      <skipped message=\"" + xmlEscape(c.message, true) + "\"/>\n";
  } else if (!c.kind.empty()) {
    (c.kind == "failure" ? counts.failures : counts.errors)++;
    out += "      <" + c.kind + " message=\"" + xmlEscape(c.message, true) + "\"";
    out += c.body.empty() ? "/>\n" : ">" + xmlEscape(c.body) + "</" + c.kind + ">\n";
  }
  if (!c.out.empty()) out += "      <system-out>" + xmlEscape(c.out) + "</system-out>\n";
  if (!c.err.empty()) out += "      <system-err>" + xmlEscape(c.err) + "</system-err>\n";
  out += "    </testcase>\n";
}

}  // namespace

std::string xmlEscape(std::string_view in, bool attribute) {
  std::string out;
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size();) {
    const unsigned char c = static_cast<unsigned char>(in[i]);
    if (c < 0x80) {
      switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&apos;"; break;
        case '\t': out += attribute ? "&#9;" : "\t"; break;
        case '\n': out += attribute ? "&#10;" : "\n"; break;
        case '\r': out += attribute ? "&#13;" : "\r"; break;
        default:
          if (c < 0x20) out += kReplacement;  // XML 1.0 allows no other C0 control, not even as &#N;
          else out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    std::uint32_t cp = 0;
    const std::size_t len = utf8Sequence(in, i, cp);
    if (len == 0) {
      out += kReplacement;
      ++i;
    } else {
      if (cp == 0xFFFE || cp == 0xFFFF) out += kReplacement;
      else out.append(in.substr(i, len));
      i += len;
    }
  }
  return out;
}

std::string junitReport(const json& run, const std::string& note) {
  const json hosts = run.is_object() && run.contains("hosts") && run["hosts"].is_array() ? run["hosts"] : json::array();

  // Step ids in workflow order; ids only seen in records (an older workflow version) go last.
  std::vector<std::string> step_ids;
  std::set<std::string> known;
  if (run.is_object() && run.contains("steps") && run["steps"].is_array())
    for (const auto& s : run["steps"])
      if (s.is_string() && known.insert(s.get<std::string>()).second) step_ids.push_back(s.get<std::string>());
  int max_pass = 1;
  for (const auto& h : hosts) {
    max_pass = std::max<int>(max_pass, static_cast<int>(intField(h, "pass")));
    for (const auto& r : h.value("steps", json::array())) {
      max_pass = std::max<int>(max_pass, static_cast<int>(intField(r, "pass")));
      const std::string id = text(r, "step");
      if (known.insert(id).second) step_ids.push_back(id);
    }
  }

  std::string cases;
  Counts counts;
  std::int64_t longest_host_ms = 0;
  for (const auto& h : hosts) {
    const std::string host = text(h, "host");
    const std::string status = text(h, "status");
    const bool finished = status == "passed" || status == "failed" || status == "cancelled";
    const json records = h.value("steps", json::array());
    int host_passes = std::max<int>(1, static_cast<int>(intField(h, "pass")));
    for (const auto& r : records) host_passes = std::max<int>(host_passes, static_cast<int>(intField(r, "pass")));
    std::int64_t host_ms = 0;
    for (int pass = 1; pass <= host_passes; ++pass) {
      for (const auto& step : step_ids) {
        std::vector<const json*> recs;
        for (const auto& r : records)
          if (text(r, "step") == step && std::max<std::int64_t>(1, intField(r, "pass")) == pass) recs.push_back(&r);
        const bool current = !finished && pass == intField(h, "pass") && step == text(h, "current_step");
        const std::string name = max_pass > 1 ? step + " (pass " + std::to_string(pass) + ")" : step;
        TestCase c = stepCase(host, name, recs, finished, current);
        host_ms += c.duration_ms;
        writeCase(cases, c, counts);
      }
    }
    longest_host_ms = std::max(longest_host_ms, host_ms);
    writeCase(cases, verdictCase(h, host_ms, note), counts);
  }

  const std::int64_t created = intField(run, "created_at_ms");
  const std::int64_t finished = intField(run, "finished_at_ms");
  const std::int64_t suite_ms = created > 0 && finished >= created ? finished - created : longest_host_ms;
  std::string timestamp = created > 0 ? formatTimestamp(created) : "";
  if (!timestamp.empty() && timestamp.back() == 'Z') timestamp.pop_back();  // the JUnit schema takes no zone: UTC

  const std::string id = text(run, "id");
  const std::string workflow = text(run, "workflow");
  const std::string counts_attrs = "tests=\"" + std::to_string(counts.tests) + "\" failures=\"" +
                                   std::to_string(counts.failures) + "\" errors=\"" + std::to_string(counts.errors) +
                                   "\" skipped=\"" + std::to_string(counts.skipped) + "\" time=\"" + seconds(suite_ms) + "\"";
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<testsuites name=\"kiln\" " + counts_attrs + ">\n";
  out += "  <testsuite name=\"" + xmlEscape(workflow + (id.empty() ? "" : " " + id), true) + "\" " + counts_attrs;
  if (!timestamp.empty()) out += " timestamp=\"" + timestamp + "\"";
  out += ">\n    <properties>\n";
  auto property = [&](const std::string& name, const std::string& value) {
    if (value.empty()) return;
    out += "      <property name=\"" + xmlEscape(name, true) + "\" value=\"" + xmlEscape(value, true) + "\"/>\n";
  };
  for (const char* key : {"id", "workflow", "workflow_hash", "purpose", "scope", "state", "created_by"})
    property(std::string("run.") + key, text(run, key));
  if (run.is_object() && run.contains("params") && run["params"].is_object())
    for (const auto& [k, v] : run["params"].items()) property("param." + k, cellText(v));
  property("note", note);
  out += "    </properties>\n" + cases + "  </testsuite>\n</testsuites>\n";
  return out;
}

}  // namespace kiln::cli
