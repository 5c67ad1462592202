#pragma once
// The check evaluator: a step's `checks` applied to its parsed output (nlohmann::json).
// Language (details and examples in orchestrator/workflow/README.md):
//   path      dotted keys with selectors: `gpu_count`, `gpus[*].fabric.state`, `gpus[0].uuid`,
//             `tests[status=Fail].name` (elements whose `status` equals "Fail"),
//             `["DCGM Diagnostic"].version` (a quoted key).
//             `[*]` and filters mean EVERY selected element must satisfy the operator; a path
//             that selects nothing fails (except `exists: false`).
//   operators eq ne lt le gt ge in not_in matches exists, or the delta form
//             `delta_from: <earlier step>` + `max_increase: N` (default 0) [+ `fields: [...]`].
//             in / not_in on a list value: every element is in / none is in the operand list
//             (`clock_event_reasons_active` not_in [hw_slowdown, ...]).
//   null      a selected value that is null (the tool printed N/A, or this driver does not
//             print the field) passes only `eq: null` and `in: [..., null]`; every other
//             operator fails on it (ne, not_in and matches included), `exists` passes (the key
//             is there: use `ne: null` to require a value). Delta checks skip a counter null on
//             both sides and fail one null on one side only.
// Failure messages say what was expected, what was found and where, naming array elements by
// their label ("gpu 2 link 7", "test memory"): the element's `name`, `id`, `index`, `gpu`,
// `gpu_id`, `link` or `link_id` value, else its position; the word is the array's key without
// a trailing 's'. All functions are pure and thread-safe.

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "orchestrator/workflow/spec.h"

namespace kiln::workflow {

struct PathSegment {
  enum class Kind { kKey, kIndex, kAll, kFilter };
  Kind kind = Kind::kKey;
  std::string key;           // kKey: the key; kFilter: the field compared
  std::size_t index = 0;     // kIndex
  std::string filter_value;  // kFilter: the wanted value, compared as text
  bool operator==(const PathSegment&) const = default;
};

// Parses a check path; kInvalidContent with a message saying what is wrong and where.
kiln::Result<std::vector<PathSegment>> parsePath(std::string_view path);

struct CheckOutcome {
  std::string name;
  bool passed = false;
  bool skipped = false;  // `when` was false; passed is true
  std::string message;   // human: expected, found, where
  // The labels of the elements that failed ("gpu 2 link 7"), for link classification and UIs.
  std::vector<std::string> failed_at;
};

// Evaluates one check. `earlier` holds parsed outputs of earlier steps by step id (for
// delta_from); `params` the run's resolved parameter values. Never throws.
CheckOutcome evaluateCheck(const Check& check, const nlohmann::json& parsed,
                           const std::map<std::string, nlohmann::json>& earlier,
                           const ParamValues& params);

// Evaluates every check of `step`, in order.
std::vector<CheckOutcome> evaluateChecks(const StepSpec& step, const nlohmann::json& parsed,
                                         const std::map<std::string, nlohmann::json>& earlier,
                                         const ParamValues& params);

// Whether all outcomes passed.
bool allPassed(const std::vector<CheckOutcome>& outcomes);

// The distinct values at `path` of `parsed`, in the order found, as text ("(missing)" where the
// path does not reach, "(not reported)" for null): what a barrier's `agree` compares.
std::vector<std::string> distinctValues(const nlohmann::json& parsed, std::string_view path);

}  // namespace kiln::workflow
