#pragma once
// `{{name}}` templates in argv elements, check operands and `when` conditions.
// A reference is `{{param}}`, `{{host.field}}` or `{{pod.field}}`; spaces inside the braces are
// allowed (`{{ param }}`). There is no escaping and no shell: a substitution happens inside one
// argv element and never splits or joins elements. All functions are pure and thread-safe.

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "orchestrator/workflow/spec.h"

namespace kiln::workflow {

// The names referenced in `text`, in order ("expected_driver", "host.name"). kInvalidContent if a
// `{{` is not closed or a name is empty or holds characters other than [A-Za-z0-9_.-].
kiln::Result<std::vector<std::string>> templateNames(std::string_view text);

// `text` with every reference replaced: names starting with "host." or "pod." from `fields`,
// others from `params`. kInvalidArgument naming the first unknown reference.
kiln::Result<std::string> substitute(std::string_view text, const ParamValues& params,
                                     const ContextFields& fields);

// substitute() on each argv element; the result has exactly as many elements as `argv`.
kiln::Result<std::vector<std::string>> substituteArgv(const std::vector<std::string>& argv,
                                                      const ParamValues& params,
                                                      const ContextFields& fields);

// A `when` condition: true if `when` is empty (no condition) or substitutes to anything other
// than "", "false" or "0".
kiln::Result<bool> evaluateWhen(std::string_view when, const ParamValues& params,
                                const ContextFields& fields);

// If `text` is exactly one reference ("{{soak}}", spaces allowed), its name; else empty.
std::string soleReference(std::string_view text);

}  // namespace kiln::workflow
