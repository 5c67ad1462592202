#include "orchestrator/core/roles.h"

namespace kiln::core {

std::string_view roleName(Role r) {
  switch (r) {
    case Role::kViewer: return "viewer";
    case Role::kOperator: return "operator";
    case Role::kAdmin: return "admin";
    case Role::kAgent: return "agent";
    case Role::kEnroll: return "enroll";
    case Role::kPreJob: return "prejob";
  }
  return "unknown";
}

std::optional<Role> parseRole(std::string_view name) {
  for (Role r : {Role::kViewer, Role::kOperator, Role::kAdmin, Role::kAgent, Role::kEnroll, Role::kPreJob})
    if (roleName(r) == name) return r;
  return std::nullopt;
}

bool roleAllows(Role have, Role need) {
  if (need == Role::kPreJob) return have == Role::kPreJob || have == Role::kOperator || have == Role::kAdmin;
  auto apart = [](Role r) { return r == Role::kAgent || r == Role::kEnroll || r == Role::kPreJob; };
  if (apart(have) || apart(need)) return have == need;
  return static_cast<int>(have) >= static_cast<int>(need);
}

}  // namespace kiln::core

#include "orchestrator/core/store.h"

namespace kiln::core {

std::optional<ParsedToken> parseBearerToken(std::string_view token) {
  constexpr std::string_view kPrefix = "kiln_";
  if (token.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  token.remove_prefix(kPrefix.size());
  auto sep = token.find('_');
  if (sep == std::string_view::npos || sep == 0 || sep + 1 >= token.size()) return std::nullopt;
  if (token.size() > 200) return std::nullopt;
  return ParsedToken{std::string(token.substr(0, sep)), std::string(token.substr(sep + 1))};
}

}  // namespace kiln::core
