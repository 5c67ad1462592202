#include "agents/sim/fleet/step.h"

#include <algorithm>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <mutex>
#include <numbers>
#include <unordered_map>

#include "agents/parsers/parsers.h"
#include "common/artifact_ref.h"
#include "agents/sim/ids.h"
#include "agents/sim/render.h"

namespace kiln::vfleet {

using nlohmann::json;

namespace {

std::chrono::nanoseconds seconds(double s) {
  // Clamp far beyond any step timeout (a hang is 7 days) without overflowing.
  if (s > 1e9) s = 1e9;
  if (s < 0) s = 0;
  // Rounded, not truncated: 240 s x 0.02 is 4.8 s, not 4.799999999 s.
  return std::chrono::nanoseconds(std::llround(s * 1e9));
}

double chunkSeconds(const sim::OutputChunk& c, double scale) {
  return c.scaled ? c.delay_s * scale : c.delay_s;
}

// parsers::parse, remembered by format and text. The simulated tools print the same text on
// many hosts (every healthy host's dcgmi nvlink -e of one GPU), and one kiln-vfleet process
// parses for thousands of hosts on one thread: each parse kept the next hosts of a pod, whose
// steps end together, waiting (a quarter of the simulator's CPU in a validation burst), which
// the rollout bench counted as kilnd's overhead. A real host parses its own output on its own
// CPU. The report is the same either way: the same text, the same parser.
kiln::Result<json> parseRemembered(parsers::Format format, const std::string& text) {
  static std::mutex mu;
  static std::unordered_map<std::string, kiln::Result<json>> seen;
  std::string key(parsers::formatName(format));
  key += '\0';
  key += text;
  {
    std::lock_guard lock(mu);
    if (auto it = seen.find(key); it != seen.end()) return it->second;
  }
  auto doc = parsers::parse(format, text);
  std::lock_guard lock(mu);
  // Texts one host alone prints (nvidia-smi's serials) churn through; the shared ones come back.
  if (seen.size() >= 512) seen.clear();
  seen.emplace(std::move(key), doc);
  return doc;
}

}  // namespace

double durationFactor(std::uint64_t seed, std::string_view host, std::string_view assignment_id,
                      double sigma) {
  KILN_CHECK(sigma >= 0 && std::isfinite(sigma));
  if (sigma == 0) return 1.0;
  // Box-Muller over two hashes of the same key: a standard normal z, then exp(sigma z).
  const std::string key =
      std::to_string(seed) + "/duration/" + std::string(host) + "/" + std::string(assignment_id);
  const double u1 = 1.0 - sim::unitInterval(sim::fnv1a64(key + "/1"));  // (0, 1]: log is finite
  const double u2 = sim::unitInterval(sim::fnv1a64(key + "/2"));
  const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  return std::min(kMaxDurationFactor, std::exp(sigma * z));
}

SimProcess startProcess(sim::HostState& state, const Assignment& a, double time_scale,
                        const sim::ToolContext& ctx, double duration_factor) {
  KILN_CHECK(time_scale >= 0 && duration_factor > 0);
  SimProcess p;
  p.time_scale = time_scale;
  p.timeout = std::chrono::milliseconds(a.timeout_ms);
  if (a.isStage()) {
    // Fetching stands in for nothing here: the simulated host has its artifacts at once.
    p.started = true;
    for (const auto& r : a.artifacts)
      p.run.out("staged " + artifactFileName(r.url) + " sha256 " + r.sha256 + " (kiln-vfleet: simulated)\n");
    return p;
  }
  // A real agent fetches and checks each artifact; a simulated host has it at once, under the
  // path a real agent's cache would give it (tools read the file's name).
  std::map<std::string, std::string> paths;
  for (const auto& r : a.artifacts) paths[r.sha256] = "/var/cache/kiln/artifacts/" + r.sha256 + "/" + artifactFileName(r.url);
  auto substituted = replaceArtifactPlaceholders(a.argv, paths);
  if (!substituted.ok()) {
    p.spawn_error = substituted.error().message;
    return p;
  }
  const std::vector<std::string>& argv = *substituted;
  const std::string tool = std::filesystem::path(argv.front()).filename().string();
  if (!sim::isToolName(tool) && tool != "kiln-hwsim") {
    std::string known = "kiln-hwsim";
    for (const char* t : sim::kToolNames) known += std::string(", ") + t;
    p.spawn_error = "execvp " + argv.front() +
                    ": No such file or directory (kiln-vfleet simulates only " + known + ")";
    return p;
  }
  p.started = true;
  const std::vector<std::string> args(argv.begin() + 1, argv.end());
  const std::string boot_before = state.boot_id;
  p.run = sim::runTool(state, tool, args, ctx);
  double scaled = 0, fixed = 0;
  for (const auto& c : p.run.chunks) (c.scaled ? scaled : fixed) += chunkSeconds(c, time_scale);
  double factor = duration_factor;
  const double timeout_s = std::chrono::duration<double>(p.timeout).count();
  if (factor > 1 && timeout_s > 0 && scaled > 0 && scaled + fixed < timeout_s) {
    factor = std::min(factor, std::max(1.0, (0.9 * timeout_s - fixed) / scaled));
  }
  // The factor goes into the scale, so the output's elapsed stamps and a cancelled step's
  // output so far follow the stretched time too.
  p.duration_factor = factor;
  p.time_scale = time_scale * factor;
  double total = 0;
  for (const auto& c : p.run.chunks) total += chunkSeconds(c, p.time_scale);
  p.natural_end = seconds(total);
  if (a.type == "reboot" && p.run.exit_code == 0) {
    // A reboot step ends when the boot id changes; a command that does not reboot waits for
    // the timeout (docs/agent-protocol.md, "Reboot steps").
    sim::HostState after = state;
    if (p.run.on_complete) p.run.on_complete(after);
    if (after.boot_id == boot_before) p.natural_end = seconds(1e9);
  }
  return p;
}

std::string tail(const std::string& s, std::size_t cap) {
  return s.size() <= cap ? s : s.substr(s.size() - cap);
}

json inventoryOf(const sim::HostState& state) {
  json out = json::object();
  auto j = json::parse(sim::renderInventory(state), nullptr, false);
  if (!j.is_object()) return out;
  for (const auto& [k, v] : j.items()) {
    if (k == "boot_id" || !v.is_string()) continue;
    out[k] = v;
  }
  return out;
}

namespace {

// The report of a step that never started (a field a real agent would fill stays at its
// protocol default).
protocol::StepReport notStarted(const std::string& host, std::int64_t lease, const std::string& boot_id,
                                const std::string& why) {
  protocol::StepReport r;
  r.lease = lease;
  r.host = host;
  r.boot_id = boot_id;
  r.spawn_error = why;
  return r;
}

}  // namespace

json invalidAssignmentBody(const std::string& host, std::int64_t lease, const std::string& boot_id,
                           const std::string& why) {
  return protocol::toJson(notStarted(host, lease, boot_id, "invalid assignment: " + why));
}

json finishProcess(sim::HostState& state, const Assignment& a, SimProcess& p, Ending ending,
                   std::chrono::nanoseconds elapsed, const std::string& note) {
  std::string out, err;
  if (p.started) {
    if (ending == Ending::kFinished) {
      out = p.run.stdoutText(p.time_scale);
      err = p.run.stderrText(p.time_scale);
      if (p.run.on_complete) p.run.on_complete(state);
    } else {
      // Output printed before the process was stopped.
      double t = 0;
      const double limit = std::chrono::duration<double>(elapsed).count();
      for (const auto& c : p.run.chunks) {
        t += chunkSeconds(c, p.time_scale);
        if (t > limit) break;
        (c.to_stderr ? err : out) += sim::chunkText(c, t);
      }
    }
  }
  const bool is_reboot = a.type == "reboot";
  protocol::StepReport body = notStarted(state.host, a.lease, state.boot_id, "");
  body.spawn_error = p.spawn_error;
  body.started = p.started;
  body.duration_ms = std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count();
  body.stdout_tail = tail(out, a.output_cap);
  body.stderr_tail = tail(err, a.output_cap);
  body.stdout_bytes = out.size();
  body.stderr_bytes = err.size();
  body.agent_note = note;
  if (!p.started) return protocol::toJson(body);
  switch (ending) {
    case Ending::kFinished:
      body.exit_code = p.run.exit_code;
      break;
    case Ending::kTimedOut:
      body.timed_out = true;
      // A run step is killed (SIGTERM ends a simulated tool); a reboot that never came back
      // has nothing left to kill.
      if (!is_reboot) body.signal = SIGTERM;
      break;
    case Ending::kCancelled:
      body.cancelled = true;
      body.signal = SIGTERM;
      break;
  }
  if (ending == Ending::kFinished && !a.parse.empty()) {
    auto format = parsers::formatFromName(a.parse);
    if (!format.ok()) {
      body.parse_error = format.error().message;
    } else if (out.size() > kParseCap) {
      body.parse_error = "stdout is " + std::to_string(out.size()) +
                            " bytes, over the agent's parse limit of " +
                            std::to_string(kParseCap) + " bytes";
    } else if (auto doc = parseRemembered(*format, out); doc.ok()) {
      body.parsed = std::move(*doc);
    } else {
      body.parse_error = doc.error().message;
    }
  }
  protocol::trimParsedStdout(a, body);  // as kiln-agent does
  if (a.inventory_after) body.inventory = inventoryOf(state);
  return protocol::toJson(body);
}

}  // namespace kiln::vfleet
