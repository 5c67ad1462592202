#pragma once
// One assignment of docs/agent-protocol.md run in process on a simulated host: the tool's
// argv goes to kiln::sim::runTool on the host's HostState, its (scaled) duration becomes a
// timer of the fleet, and the result body is the one the real kiln-agent reports. Pure and
// thread-compatible (no I/O, no clock).

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "agents/sim/host_state.h"
#include "agents/sim/tools.h"
#include "common/agent_protocol.h"
#include "common/result.h"

namespace kiln::vfleet {

inline constexpr const char* kAgentVersion = "0.1.0-vfleet";
// The agent reads at most this much stdout for its parsers (common/exec parse_capture_cap).
inline constexpr std::size_t kParseCap = 16u << 20;

// The assignment as kilnd sends it: the same type and decoder as kiln-agent's
// (common/agent_protocol.h), so the simulator cannot drift from the real agent.
using protocol::Assignment;
using protocol::assignmentFromJson;

// A simulated process: the tool run as data, and where it ends in real time.
struct SimProcess {
  bool started = false;
  std::string spawn_error;      // set when argv[0] is not a simulated tool
  sim::ToolRun run;             // what the tool prints and when (nominal seconds)
  double time_scale = 1.0;      // the fleet's time scale x duration_factor
  double duration_factor = 1.0;  // the spread applied to this run (durationFactor, clamped)
  std::chrono::nanoseconds natural_end{0};  // when the tool ends by itself (scaled)
  std::chrono::nanoseconds timeout{0};      // 0 = none

  bool timesOut() const { return timeout.count() > 0 && natural_end > timeout; }
  // When the fleet must look at it again: the natural end or the timeout.
  std::chrono::nanoseconds end() const { return timesOut() ? timeout : natural_end; }
};

// The largest factor durationFactor() returns (see there).
inline constexpr double kMaxDurationFactor = 4.0;

// How much longer (or shorter) than its nominal time one step's tools take: a log-normal draw
// with median 1 and shape `sigma` (sigma 0.25: ~95% of steps within 0.61x-1.63x), capped at
// kMaxDurationFactor. Deterministic in (seed, host, assignment id): the same assignment handed
// out again (a retry after a lost answer, a re-lease) takes the same time, and two runs with
// the same seed draw alike. Exactly 1 when sigma is 0. Pre-condition: 0 <= sigma, finite.
double durationFactor(std::uint64_t seed, std::string_view host, std::string_view assignment_id,
                      double sigma);

// Starts `a.argv` on `state` (state changes that happen at the start, e.g. counters that grow,
// happen now; run.on_complete is applied by finishProcess). The tool's scaled delays (the
// simulated reboot included; hangs are not scaled) are stretched by `duration_factor`, but
// never past 90% of the step's timeout when the tool would end in time without it: the spread
// moves time, not outcomes (a tool slow enough to time out is a fault, --fault-kind slow).
// Pre-condition: time_scale >= 0, duration_factor > 0.
SimProcess startProcess(sim::HostState& state, const Assignment& a, double time_scale,
                        const sim::ToolContext& ctx, double duration_factor = 1.0);

// How a process ended.
enum class Ending { kFinished, kTimedOut, kCancelled };

// The result fields of docs/agent-protocol.md for `p` ended as `ending` after `elapsed` of real
// time, with output printed up to then. Applies run.on_complete to `state` when it finished.
// Runs the assignment's parser over the full stdout, and adds the inventory when
// `a.inventory_after`. `note` goes to agent_note.
nlohmann::json finishProcess(sim::HostState& state, const Assignment& a, SimProcess& p,
                             Ending ending, std::chrono::nanoseconds elapsed,
                             const std::string& note = "");

// The body of a report for an assignment that could not even be read (bad JSON shape).
nlohmann::json invalidAssignmentBody(const std::string& host, std::int64_t lease,
                                     const std::string& boot_id, const std::string& why);

// The host's inventory as kilnd takes it (component -> version, no boot_id).
nlohmann::json inventoryOf(const sim::HostState& state);

// The last `cap` bytes of `s`.
std::string tail(const std::string& s, std::size_t cap);

}  // namespace kiln::vfleet
