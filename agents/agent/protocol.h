#pragma once
// The agent's own part of docs/agent-protocol.md; the shared part (assignments, poll answers,
// paths) is common/agent_protocol.h, brought in here under the agent's names. Pure.

#include <nlohmann/json.hpp>

#include "common/agent_protocol.h"

namespace kiln::agent {

inline constexpr const char* kAgentVersion = "0.1.0";
using protocol::Assignment;
using protocol::assignmentFromJson;
using protocol::dumpJson;
using protocol::kMaxOutputCap;
using protocol::percentEncode;
using protocol::PollAnswer;
using protocol::pollAnswerFromBody;
using protocol::registerPath;
using protocol::outputPath;
using protocol::resultPath;
using protocol::StepReport;
using protocol::toJson;
using protocol::workPath;

// The inventory as sent to kilnd: the component -> version entries of the inventory command's
// object (string values), without boot_id.
nlohmann::json inventoryForKilnd(const nlohmann::json& inventory);

}  // namespace kiln::agent
