#include "common/executable_allowlist.h"

#include <fstream>
#include <sstream>

namespace kiln {

Result<ExecutableAllowList> parseExecutableAllowList(std::string_view text, const std::string& source) {
  ExecutableAllowList out;
  out.source = source;
  std::size_t line_no = 0;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    ++line_no;
    start = end + 1;
    if (auto hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string_view::npos) continue;
    line = line.substr(first, line.find_last_not_of(" \t\r") - first + 1);
    const std::string where = source + ":" + std::to_string(line_no);
    if (line.find_first_of(" \t") != std::string_view::npos)
      return invalidArgument(where + ": one executable a line, without arguments, got '" + std::string(line) + "'");
    if (line.find('/') != std::string_view::npos && line.front() != '/')
      return invalidArgument(where + ": expected a command name or an absolute path, got '" + std::string(line) + "'");
    out.entries.insert(std::string(line));
  }
  if (out.entries.empty())
    return invalidArgument(source + ": no executable listed (an empty allow-list would refuse every step)");
  return out;
}

Result<ExecutableAllowList> loadExecutableAllowList(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error(ErrorCode::kNotFound, "cannot read the executable allow-list " + path);
  std::stringstream buf;
  buf << in.rdbuf();
  return parseExecutableAllowList(buf.str(), path);
}

std::optional<std::string> executableRefusal(const ExecutableAllowList& list, const std::vector<std::string>& argv) {
  if (argv.empty() || argv.front().empty()) return "a step with no executable";
  const std::string& exe = argv.front();
  if (exe.find("{{") != std::string::npos)
    return "executable '" + exe + "' is a template: it cannot be checked against the allow-list " + list.source;
  if (list.entries.count(exe)) return std::nullopt;
  return "executable '" + exe + "' is not in the allow-list " + list.source;
}

}  // namespace kiln
