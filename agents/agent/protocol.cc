#include "agents/agent/protocol.h"

namespace kiln::agent {

using nlohmann::json;

json inventoryForKilnd(const json& inventory) {
  json out = json::object();
  if (!inventory.is_object()) return out;
  for (const auto& [key, value] : inventory.items()) {
    if (key == "boot_id" || !value.is_string()) continue;
    out[key] = value;
  }
  return out;
}

}  // namespace kiln::agent
