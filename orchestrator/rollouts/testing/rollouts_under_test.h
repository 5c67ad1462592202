#pragma once
// The rollout service and controller over the fakes, as kilnd runs them, for tests without
// PostgreSQL.

#include <string>
#include <utility>
#include <vector>

#include "orchestrator/core/clock.h"
#include "orchestrator/core/store.h"
#include "orchestrator/core/testing/fake_fleet.h"
#include "orchestrator/rollouts/controller.h"
#include "orchestrator/rollouts/rollout_service.h"
#include "orchestrator/rollouts/rollout_store.h"
#include "orchestrator/runs/run_control.h"
#include "orchestrator/runs/run_service.h"

namespace kiln::rollouts::testing {

// The service (the API's side) and the controller (the passes) over the same fakes, as kilnd
// runs them: tick() is the controller's, the rest the service's.
class RolloutsUnderTest {
 public:
  RolloutsUnderTest(core::testing::FakeFleet& fleet, RolloutStore& store, runs::RunControl& runs, core::Clock& clock,
                    ControllerOptions options)
      : service_(fleet, store, runs, clock, {options.log}),
        controller_(fleet, store, runs, clock, std::move(options)) {}
  int tick() { return controller_.tick(); }
  Result<RolloutView> view(const std::string& id) { return service_.view(id); }
  Result<std::vector<RolloutPodRow>> pods(const std::string& id) { return service_.pods(id); }
  Result<RolloutView> verb(const std::string& id, const std::string& verb, const core::Actor& actor,
                           const std::string& reason = "") {
    return service_.verb(id, verb, actor, reason);
  }
  Result<RolloutView> podVerb(const std::string& id, const std::string& pod, const std::string& verb,
                              const core::Actor& actor, const std::string& reason = "") {
    return service_.podVerb(id, pod, verb, actor, reason);
  }
  Result<RolloutView> rollback(const std::string& id, const core::Actor& actor, const std::string& reason = "") {
    return service_.rollback(id, actor, reason);
  }
  Result<CreateOutcome> create(const CreateRequest& request, const core::Actor& actor) {
    return service_.create(request, actor);
  }

 private:
  RolloutService service_;
  RolloutController controller_;
};

}  // namespace kiln::rollouts::testing
