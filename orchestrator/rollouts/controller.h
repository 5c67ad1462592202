#pragma once
// The rollout controller: one pass (tick) over every active rollout moves each pod in flight
// through
//   drain -> the bundle's workflow on every host in parallel -> pod validation -> undrain
// and admits new pods only through rollouts::admit(). Every step is idempotent, so a kilnd
// killed at any point and restarted (or another replica taking over) carries on without
// upgrading a pod twice. The API's side (bundles, plans, verbs, views) is RolloutService;
// kilnd's ControllerLoop calls tick() from one thread, on the leader only; within a pass the
// pods in flight take their steps on ControllerOptions::reconcile_threads threads.
//
// Files: controller.cc (the pass and admission), controller_phases.cc (what the phases share),
// controller_drain.cc, controller_upgrade.cc and controller_validate.cc (one phase of a pod in
// flight each), controller_stage.cc (the artifacts fetched before the drain),
// controller_release.cc (asking the job scheduler to release hosts).

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/executor.h"
#include "common/failure_log.h"
#include "common/logger.h"
#include "orchestrator/core/clock.h"
#include "orchestrator/core/store.h"
#include "orchestrator/rollouts/rollout_store.h"
#include "orchestrator/runs/run_control.h"
#include "orchestrator/scheduler/driver.h"

namespace kiln::rollouts {

struct LoadedRollout;

using scheduler::ReleaseRequest;

struct ControllerOptions {
  std::string validation_workflow = "pre-job-health";
  // Fetches and checks a pod's artifacts on its hosts before the drain (controller_stage.cc);
  // empty, or a workflow kilnd does not have: no staging (the upgrade fetches them instead).
  std::string stage_workflow = "artifact-stage";
  // The job scheduler's driver (scheduler/driver.h); null: no scheduler (a drained host goes to
  // maintenance in the same pass). Its release ask (requestDrain) goes out for a pod the limits
  // would admit now (and for a draining pod with allocated hosts); again hook_retry after an ask
  // that was not told, and hook_repeat after one that was, while the pod stays allocated. An ask
  // whose answer is pending is not repeated. The outcome of each ask is a rollout event, written
  // by the pass that learns it. Its drain gate (heldBack) keeps a drained host out of
  // maintenance until the scheduler has let it go. Must outlive the controller.
  scheduler::Driver* scheduler = nullptr;
  std::chrono::seconds hook_retry{15};
  std::chrono::seconds hook_repeat{300};
  // Where a write the pass goes on without is said (null: nowhere); see common/failure_log.h.
  Logger* log = nullptr;
  // How many pods in flight a pass reconciles at once, each on its own thread (and database
  // connection). Pods in flight share nothing a step writes (their own hosts, runs and row), so
  // a round in which many pods finish a phase together takes about its slowest pod instead of
  // the sum of them. Admission runs after every pod's step of the pass is done. 1: one pod
  // after another on the pass's thread.
  int reconcile_threads = 1;
};

// What Kiln tells the job scheduler about a rollout's drain: "kiln: ro-3 firmware-upgrade
// gb200-fw 2026.12" (the rollout, the bundle's workflow, name and version).
std::string schedulerReason(const std::string& rollout, const Bundle& bundle);

class RolloutController {
 public:
  RolloutController(core::FleetHosts& fleet, RolloutControllerStore& store, runs::RunControl& runs, core::Clock& clock,
                    ControllerOptions options);

  // One pass over every active rollout. Returns how many changes it made.
  int tick();

 private:
  // One in-flight pod's next step. `run_states`: run id -> state of the pods' runs, read once
  // per pass (runStatus is read only for a run that finished).
  int reconcile(const LoadedRollout& ro, RolloutPodRow& pod, const std::map<std::string, std::string>& run_states);
  // One pod's step in one pass, and what its phases share (controller_phases.cc).
  struct PodStep {
    PodStep(RolloutController& c, const LoadedRollout& r, RolloutPodRow& p,
            const std::map<std::string, std::string>& states);
    RolloutController& controller;
    const LoadedRollout& ro;
    RolloutPodRow& pod;
    const std::map<std::string, std::string>& run_states;
    const std::string tag;  // "rollout ro-3: ", before log lines and host-move reasons
    const bool aborting;
    // The host moves of a step go to the store as one batch (one transaction). A refused move
    // (the host is not where the step expects it, e.g. an earlier pass that a crash cut short
    // moved it already) is skipped and the others apply.
    std::vector<core::HostTransition> moves;

    // Ends the pod in `to` (with an event); returns 1 (a change).
    int finish(PodPhase from, PodPhase to, const std::string& message);
    void move(const std::string& host, core::HostAction a, const std::string& reason);
    // Applies the moves and folds the states they led to into `states` (host -> state); false
    // when the store could not be reached (nothing applied).
    bool applyMoves(std::map<std::string, core::HostState>& states);
    // The run's state from the pass's one query; runStatus (every group's state) only once it
    // finished (a run the query did not see is read directly). While aborting, a running run
    // is asked to stop. nullopt: not finished (or not readable).
    std::optional<runs::RunStatus> finishedRun(const std::string& run_id);
  };
  // The phases of a pod in flight, one file each. Return how many changes they made.
  int drain(PodStep& step);     // controller_drain.cc
  // Staging before the drain (controller_stage.cc): nullopt once the pod's artifacts are on its
  // hosts (or there is nothing to stage), else the changes made while the pod waits for it.
  std::optional<int> stage(PodStep& step, const std::vector<core::HostSummary>& hosts);
  int upgrade(PodStep& step);   // controller_upgrade.cc
  int validate(PodStep& step);  // controller_validate.cc
  int admitPods(const LoadedRollout& ro, const std::vector<RolloutPodRow>& pods);
  // reconcile() for each pod, on the reconcile threads when there are any; returns once every
  // pod's step is done, with their changes (rethrows the first exception one of them threw).
  int reconcileAll(const LoadedRollout& ro, const std::vector<RolloutPodRow*>& pods,
                   const std::map<std::string, std::string>& run_states);
  // Asks the job scheduler to release the pod's allocated hosts unless it was asked recently
  // or an ask is pending; `allocated_hosts` is called only when an ask is due.
  void askRelease(const std::string& rollout, const std::string& pod,
                  const std::function<std::vector<std::string>()>& allocated_hosts, const std::string& reason);
  // Writes the event of every ask whose answer came back since the last pass.
  void learnReleaseAnswers();
  template <typename R>
  bool noted(const R& r, const std::string& what) {
    return failures_.noted(r, what);
  }

  core::FleetHosts& fleet_;
  RolloutControllerStore& store_;
  runs::RunControl& runs_;
  core::Clock& clock_;
  ControllerOptions options_;
  FailureLog failures_;
  // Asks to the job scheduler by "rollout/pod". Shared with the driver's `done` callbacks, which
  // may run on another thread and after this controller is gone.
  struct ReleaseAsk {
    std::string rollout, pod;
    std::size_t hosts = 0;
    core::TimePoint asked_at, next;  // next: when the pod may be asked again
    bool pending = false;            // asked, answer not yet learned by a pass
    std::optional<bool> told;        // the answer, set by `done`
  };
  struct ReleaseAsks {
    std::mutex mu;
    std::map<std::string, ReleaseAsk> by_pod;
  };
  std::shared_ptr<ReleaseAsks> asks_ = std::make_shared<ReleaseAsks>();
  // The reconcile threads (null with options_.reconcile_threads <= 1). Last: stopped first.
  std::unique_ptr<Executor> workers_;
};

}  // namespace kiln::rollouts
