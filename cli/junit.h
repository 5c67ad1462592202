#pragma once
// A workflow run as a JUnit XML report, for CI systems (GitLab, GitHub Actions, Jenkins). Pure.
//
// One <testsuite> per run. For every host, one <testcase classname=HOST name=STEP> per step of
// the workflow (per pass "STEP (pass N)" when the workflow repeats): <failure> with the step's
// message and failed checks when its last attempt failed, <skipped/> when skipped or never
// reached, <system-out> with the output tail and the earlier attempts; time from duration_ms.
// Plus one <testcase classname=HOST name="host verdict"> per host: <failure> with the host's
// failure reasons when it failed, <error> when it was cancelled or had not finished (the gate
// stopped waiting).

#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace kiln::cli {

inline constexpr const char* kVerdictTestName = "host verdict";

// Text safe inside an XML element or a double-quoted attribute: & < > " ' escaped; characters
// XML 1.0 forbids (C0 controls but tab/newline/CR, U+FFFE, U+FFFF) and bytes that are not
// UTF-8 become U+FFFD. With `attribute`, tab, newline and CR become character references so
// parsers keep them.
std::string xmlEscape(std::string_view text, bool attribute = false);

// The report for `run`, a document as GET /api/v1/workflow-runs/{id} returns it (finished or
// not). `note` (e.g. "the gate timed out after 3h") goes into the suite's properties and every
// unfinished host's <error>. Tolerates missing fields.
std::string junitReport(const nlohmann::json& run, const std::string& note = "");

}  // namespace kiln::cli
