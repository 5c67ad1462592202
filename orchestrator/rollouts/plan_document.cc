#include "orchestrator/rollouts/plan_document.h"

namespace kiln::rollouts {

using nlohmann::json;

json planDocument(const Plan& plan) {
  json waves = json::array();
  for (std::size_t i = 0; i < plan.waves.size(); ++i)
    waves.push_back({{"index", i}, {"name", i == 0 ? "canary" : "wave " + std::to_string(i)}, {"pods", plan.waves[i]}});
  json excluded = json::array();
  for (const auto& e : plan.excluded) excluded.push_back({{"pod", e.pod}, {"reason", e.reason}});
  json downgrades = json::array();
  for (const auto& d : plan.downgrades) downgrades.push_back({{"pod", d.pod}, {"reasons", d.reasons}});
  return {{"waves", waves}, {"excluded", excluded}, {"eligible", plan.eligible}, {"downgrades", downgrades}};
}

}  // namespace kiln::rollouts
