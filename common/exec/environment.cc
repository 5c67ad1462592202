#include <cstring>
#include <string_view>

#include "common/exec/process_runner.h"

namespace kiln::exec {
namespace {

bool nameAllowed(std::string_view name, const std::vector<std::string>& allow_list) {
  for (const std::string& entry : allow_list) {
    if (!entry.empty() && entry.back() == '*') {
      std::string_view prefix(entry.data(), entry.size() - 1);
      if (name.substr(0, prefix.size()) == prefix) return true;
    } else if (name == entry) {
      return true;
    }
  }
  return false;
}

}  // namespace

std::map<std::string, std::string> allowListedEnvironment(
    char** parent_env, const std::vector<std::string>& allow_list,
    const std::map<std::string, std::string>& extra) {
  std::map<std::string, std::string> env;
  for (char** entry = parent_env; entry != nullptr && *entry != nullptr; ++entry) {
    std::string_view text(*entry);
    std::size_t eq = text.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;  // not NAME=value: skip
    std::string_view name = text.substr(0, eq);
    if (!nameAllowed(name, allow_list)) continue;
    // The first occurrence wins, as in getenv().
    env.emplace(std::string(name), std::string(text.substr(eq + 1)));
  }
  for (const auto& [name, value] : extra) env[name] = value;
  return env;
}

const std::vector<std::string>& defaultEnvAllowList() {
  static const std::vector<std::string> kList = {"PATH",   "HOME", "LANG",
                                                 "LC_ALL", "TZ",   "KILN_HWSIM_*"};
  return kList;
}

}  // namespace kiln::exec
