#pragma once
// Which executables a workflow step may run (issue 31): kilnd's --workflow-executables (checked
// when a workflow is loaded, put and started) and kiln-agent's --allowed-executables (checked on
// the host before a step is spawned, so a compromised kilnd cannot run anything else there).
// One list format and one check for both. Pure.

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace kiln {

struct ExecutableAllowList {
  std::set<std::string> entries;  // command names ("nvidia-smi") and absolute paths ("/usr/sbin/nvfwupd")
  std::string source;             // the file it came from, for messages
};

// One entry a line: a command name, found in the step's PATH, or an absolute path; blank lines
// and "# comments" are ignored. Errors (kInvalidArgument) name the source and the line: a
// relative path ("bin/x"), spaces inside an entry, an empty list.
Result<ExecutableAllowList> parseExecutableAllowList(std::string_view text, const std::string& source);
// parseExecutableAllowList of a file; kNotFound when it cannot be read.
Result<ExecutableAllowList> loadExecutableAllowList(const std::string& path);

// Why `argv` may not run under `list`, or none when it may. argv[0] must be listed as written
// (a name is not matched against a listed path or the other way round: PATH decides which
// binary a name is); a templated argv[0] ("{{param}}") cannot be checked before substitution
// and is refused; an empty argv is refused.
std::optional<std::string> executableRefusal(const ExecutableAllowList& list, const std::vector<std::string>& argv);

}  // namespace kiln
