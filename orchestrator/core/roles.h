#pragma once
// Roles of API tokens (docs/DESIGN.md "REST API v1"). Pure.

#include <optional>
#include <string_view>

namespace kiln::core {

// viewer < operator < admin form a hierarchy; agent stands apart and may act only for its own
// host on the agent endpoints; enroll may only enrol agents (POST /agents/register); prejob
// (the scheduler's prolog) may only start the pre-job check on named nodes and read its
// verdict (/scheduler/checks), which operators and admins may also do.
enum class Role { kViewer, kOperator, kAdmin, kAgent, kEnroll, kPreJob };

std::string_view roleName(Role r);
std::optional<Role> parseRole(std::string_view name);
// True when a token of role `have` may call an endpoint that needs `need`.
bool roleAllows(Role have, Role need);

}  // namespace kiln::core
