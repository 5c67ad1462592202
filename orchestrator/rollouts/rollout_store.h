#pragma once
// Persistence of bundles and rollouts (orchestrator/db/pg_rollout_store.cc). Thread-safe.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "orchestrator/core/store.h"
#include "orchestrator/rollouts/bundle.h"
#include "orchestrator/rollouts/policy.h"

namespace kiln::rollouts {

struct BundleRow {
  Bundle bundle;
  core::TimePoint created_at;
  std::string created_by;
  bool used = false;  // a rollout references it: immutable
};

// A pod with its versions aggregated: kind -> version -> how many hosts (or switch trays).
struct PodSnapshot {
  std::string id, site, building, platform;
  core::PodState state = core::PodState::kInService;
  std::map<std::string, std::string> labels;
  bool allocated = false;
  std::string other_rollout;
  int hosts = 0, switch_trays = 0;
  std::map<std::string, std::map<std::string, int>> host_versions, switch_versions;
};

struct RolloutRow {
  std::string id, bundle_id;
  RolloutState state = RolloutState::kCreated;
  std::string halt_reason, rollback_of, created_by;
  Selector selector;
  Policy policy;
  nlohmann::json plan;  // the dry run's answer at creation, kept as it was shown (a document)
  core::TimePoint created_at;
  std::optional<core::TimePoint> started_at, finished_at, previous_wave_finished;
  std::optional<core::IdempotencyClaim> claim;  // on creation only: the request's Idempotency-Key
  // On creation only: an allowed downgrade's reason (its event and audit record say so).
  std::string downgrade_reason;
};

struct RolloutPodRow {
  std::string rollout_id, pod, building;
  int wave = 0, position = 0, attempt = 0;
  PodPhase phase = PodPhase::kPending;
  std::string waiting_reason, message, run_id, validation_run_id;
  nlohmann::json before_versions;
  std::optional<core::TimePoint> started_at, finished_at;
};

struct PodHostStates {
  std::string platform;
  // state -> hosts, for the states admission reads: allocated, and those no drain or upgrade
  // brings back (core::unservableAfterMaintenance)
  std::map<core::HostState, int> hosts;
};

struct RolloutEvent {
  std::string pod, kind, message;
};

// An event as the rollout's history holds it.
struct RolloutEventRow {
  std::int64_t id = 0;  // increasing in the order events were written
  core::TimePoint at;   // to the millisecond
  RolloutEvent event;   // pod empty: the rollout's own event
};

// A conditional update of one rollout pod: applied only if its phase is still `expect`.
struct PodUpdate {
  std::string pod;
  PodPhase expect;
  PodPhase phase;
  std::optional<std::string> run_id, validation_run_id, message, waiting_reason;
  std::optional<nlohmann::json> before_versions;
  bool set_started = false, set_finished = false, bump_attempt = false;
  // An operator's verb (retry, skip): applied only while the rollout is in one of these states
  // and the pod still in `expect`, checked under the rollout's row lock, so that it cannot slip
  // in after the controller decided the rollout was finished; kConflict, nothing written,
  // otherwise. Empty: the controller's own update, skipped quietly when the phase moved on.
  std::vector<RolloutState> only_while;
};

// A rollout as /metrics shows it: every pod's phase, platform and times.
struct MetricRollout {
  std::string id, bundle_id;
  RolloutState state = RolloutState::kCreated;
  Policy policy;
  std::optional<core::TimePoint> started_at;
  struct Pod {
    PodPhase phase = PodPhase::kPending;
    std::string platform;
    std::optional<core::TimePoint> started_at, finished_at;
  };
  std::vector<Pod> pods;
};

// The store is cut by consumer: RolloutService (the API's side) holds a RolloutServiceStore,
// RolloutController (the passes) a RolloutControllerStore; both share the bundle catalog and
// the rollout records. RolloutStore is all of it (db/pg_rollout_store.cc). All thread-safe.

// Bundles: published through the API, read by both sides (a rollout's bundle).
class BundleCatalog {
 public:
  virtual ~BundleCatalog() = default;

  // Creates a bundle, or returns the existing one with the same name and version when its
  // content is the same, or updates it in place when no rollout used it yet; kConflict when it
  // differs and a rollout used it.
  enum class PutOutcome { kCreated, kUpdated, kUnchanged };
  // With `if_match`: only while the stored name@version's ETag (bundleEtag) matches, else
  // kPreconditionFailed (also when there is none).
  virtual Result<std::pair<BundleRow, PutOutcome>> putBundle(const Bundle& b, const core::Actor& actor,
                                                             const std::optional<core::IfMatch>& if_match) = 0;
  // By id ("b-3") or "name@version".
  virtual Result<std::optional<BundleRow>> getBundle(const std::string& ref) = 0;
  // Newest first.
  virtual Result<std::vector<BundleRow>> listBundles() = 0;
};

// What both sides read and write of a rollout: its row, its pods, its state and its pods'
// phases, and the pods it is planned and admitted from.
class RolloutRecords {
 public:
  virtual ~RolloutRecords() = default;

  // Every pod the selector matches (SQL does the coarse filtering), with versions aggregated.
  virtual Result<std::vector<PodSnapshot>> podSnapshots(const Selector& selector) = 0;
  virtual Result<RolloutRow> getRollout(const std::string& id) = 0;
  // Plan order.
  virtual Result<std::vector<RolloutPodRow>> rolloutPods(const std::string& id) = 0;
  // A verb: moves the rollout from one of `from` to `to` (kConflict naming the current state
  // otherwise), with an event and an audit record. `completed` also needs every pod finished
  // and `aborted` no pod in flight, checked under the same row lock that a pod verb
  // (PodUpdate::only_while) takes.
  virtual Result<RolloutRow> transition(const std::string& id, const std::vector<RolloutState>& from, RolloutState to,
                                        const std::string& reason, const core::Actor& actor) = 0;
  virtual Status updatePods(const std::string& id, const std::vector<PodUpdate>& updates,
                            const std::vector<RolloutEvent>& events) = 0;
};

// What RolloutService reads and writes: the catalog, the records, and creating, listing,
// rolling back and counting rollouts.
class RolloutServiceStore : public virtual BundleCatalog, public virtual RolloutRecords {
 public:
  virtual Result<std::string> nextRolloutId() = 0;
  virtual Result<RolloutRow> createRollout(const RolloutRow& r, const std::vector<RolloutPodRow>& pods,
                                           const core::Actor& actor) = 0;
  // Newest first (by the id's number); all states when `state` is empty.
  virtual Result<core::Page<RolloutRow>> listRollouts(std::optional<RolloutState> state, const core::PageRequest& page) = 0;
  // The newest `limit` events, newest first.
  virtual Result<std::vector<RolloutEventRow>> rolloutEvents(const std::string& id, int limit) = 0;
  // Rollouts by state and unfinished rollouts' pods by phase, for /metrics.
  virtual Result<std::pair<std::map<RolloutState, int>, std::map<PodPhase, int>>> counts() = 0;
  // Rollouts not finished (created, running, paused, halted, aborting) and those that finished
  // at or after `finished_since`, oldest first, with their pods. One query, at every scrape.
  virtual Result<std::vector<MetricRollout>> metricRollouts(core::TimePoint finished_since) = 0;
  // The bundle each pod got from its newest succeeded rollout before `rollout_id`.
  virtual Result<std::map<std::string, std::string>> previousBundles(const std::string& rollout_id,
                                                                     const std::vector<std::string>& pods) = 0;
  // Per pod, the newest rollout created after `rollout_id` that changed it (succeeded there, or
  // its upgrade run started): rolling `rollout_id` back would undo that one too.
  virtual Result<std::map<std::string, std::string>> laterChanges(const std::string& rollout_id,
                                                                  const std::vector<std::string>& pods) = 0;
};

// What RolloutController reads and writes on its passes: the catalog (a rollout's bundle), the
// records, and what admission reads.
class RolloutControllerStore : public virtual BundleCatalog, public virtual RolloutRecords {
 public:
  // Rollouts the controller works on: running, paused, halted, aborting; oldest first.
  virtual Result<std::vector<std::string>> activeRollouts() = 0;
  // Sets the waiting reason of the pending pods named, and clears it on the other pending pods.
  virtual Status setWaiting(const std::string& id, const std::map<std::string, std::string>& reasons) = 0;
  // Per building: pods, pods out of service (pod state not in service, or in flight in any
  // rollout), and pods draining or upgrading in any rollout (power).
  virtual Result<std::map<std::string, BuildingLoad>> buildingLoads(const std::set<std::string>& buildings) = 0;
  // Pods of the set with a host allocated to a job or out of service (failed, repair,
  // quarantine, retired, incoming, burn_in), with their platform and those hosts by state;
  // pods with neither are left out. One query, on every controller pass.
  virtual Result<std::map<std::string, PodHostStates>> podHostStates(const std::set<std::string>& pods) = 0;
};

// The whole store, as kilnd wires it to both sides.
class RolloutStore : public RolloutServiceStore, public RolloutControllerStore {};

}  // namespace kiln::rollouts
