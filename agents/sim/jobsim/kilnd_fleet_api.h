#pragma once
// FleetApi over kilnd's REST API (kiln's http::Client). Thread-safe.

#include <memory>
#include <string>

#include "agents/sim/jobsim/job_sim.h"
#include "orchestrator/http/client.h"

namespace kiln::jobsim {

class KilndFleetApi final : public FleetApi {
 public:
  // `base_url` scheme://host:port; `token` an operator (or admin) token.
  KilndFleetApi(const std::string& base_url, const std::string& token);

  Result<std::vector<std::string>> listPods() override;
  Result<std::vector<HostView>> podHosts(const std::string& pod) override;
  Result<HostView> host(const std::string& id) override;
  Status hostAction(const std::string& id, const std::string& action, const std::string& reason) override;

 private:
  Result<nlohmann::json> get(const std::string& path);
  http::Client client_;
};

}  // namespace kiln::jobsim
