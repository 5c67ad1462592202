#include "orchestrator/core/roles.h"

namespace kiln::core {

std::string_view roleName(Role r) {
  switch (r) {
    case Role::kViewer: return "viewer";
    case Role::kOperator: return "operator";
    case Role::kAdmin: return "admin";
    case Role::kAgent: return "agent";
  }
  return "unknown";
}

std::optional<Role> parseRole(std::string_view name) {
  for (Role r : {Role::kViewer, Role::kOperator, Role::kAdmin, Role::kAgent})
    if (roleName(r) == name) return r;
  return std::nullopt;
}

bool roleAllows(Role have, Role need) {
  if (have == Role::kAgent || need == Role::kAgent) return have == need;
  return static_cast<int>(have) >= static_cast<int>(need);
}

}  // namespace kiln::core
